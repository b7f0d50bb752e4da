"""llama.cpp's OpenAI-compatible server, from the prebuilt xllamacpp wheel, on a loopback port.

Usage: python llama_server.py PORT GGUF_PATH ALIAS. xllamacpp embeds llama.cpp's own server
(the same HTTP routes, JSON-schema and tool-call handling as `llama-server`), built for any x86_64
CPU, so CI installs a 34 MB wheel instead of compiling llama.cpp (35 minutes on a busy machine).
"""

import signal
import sys

import xllamacpp

port, model, alias = int(sys.argv[1]), sys.argv[2], sys.argv[3]
params = xllamacpp.CommonParams()
params.model.path = model
params.model_alias = {alias}
params.port = port
# The whole context for one request (slots split it; 2 x 8,192 refused a 9,561-token digest
# prompt that the default 12,000-token prompt budget allows).
params.n_ctx = 16384
params.n_parallel = 1
# The chat template rendered by Jinja, which is what renders tool calls and tool results.
params.use_jinja = True
server = xllamacpp.Server(params)
print(server.listening_address, flush=True)
signal.sigwait({signal.SIGINT, signal.SIGTERM})
