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
# `family`: the core with the test-only fourth family TLSF64B added by the build alone
# (docs/architecture.md, "Adding a family"), as js/ckptscope-tlsf64b.wasm for tests/js/family.test.mjs.
if [[ $what == family ]]; then
  [[ -f build/wasm-family/CMakeCache.txt ]] || emcmake cmake -S . -B build/wasm-family -DCMAKE_BUILD_TYPE=Release \
    -DCKPT_EXTRA_FAMILY_SOURCES=tests/c/family_tlsf64b.c -DCKPT_EXTRA_FAMILIES=ckpt_family_tlsf64b \
    -DCKPT_WASM_NAME=ckptscope-tlsf64b >/dev/null
  cmake --build build/wasm-family -j"$(nproc)" --target ckptscope_wasm_simd
fi
