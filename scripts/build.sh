#!/usr/bin/env bash
# Build: `native` (library + tests, ASan + UBSan), `wasm` (the WebAssembly module the package
# loads), or both when no argument is given. Incremental: cmake rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
if [[ $what == all || $what == native ]]; then
  [[ -f build/native/CMakeCache.txt ]] || cmake -S . -B build/native -DCKPT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
  cmake --build build/native -j"$(nproc)"
fi
if [[ $what == all || $what == wasm ]]; then
  [[ -f build/wasm/CMakeCache.txt ]] || emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build/wasm -j"$(nproc)"
fi
