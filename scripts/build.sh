#!/usr/bin/env bash
# Build everything: the native library and tests (ASan + UBSan) and the WebAssembly module.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build/native -DCKPT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build/native -j"$(nproc)"
if [[ -f wasm/CMakeLists.txt ]]; then
  emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build/wasm -j"$(nproc)"
fi
