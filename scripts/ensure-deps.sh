#!/usr/bin/env bash
# Install what is missing: Debian packages with apt-get, npm packages from package-lock.json.
# `ensure-deps.sh` is for building and serving; `ensure-deps.sh test` adds what the tests need
# (clang's fuzzing runtime, Chromium). Safe to run repeatedly; does nothing when all is present.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-build}

need=()
have() { command -v "$1" >/dev/null 2>&1; }
have cmake || need+=(cmake)
have gcc || need+=(gcc)
have make || need+=(make)
have emcc || need+=(emscripten)
if [[ $mode == test ]]; then
  have clang || need+=(clang)
  have clang-format || need+=(clang-format)
  compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null || need+=(libclang-rt-14-dev)
  have chromium || need+=(chromium)
  # NumPy reads the exports back (tests/js/export.test.mjs); the docs' examples load them into
  # NumPy and PyTorch (docs/examples/verify.mjs): Debian's, for Debian's python3
  /usr/bin/python3 -c 'import numpy' 2>/dev/null || need+=(python3-numpy)
  /usr/bin/python3 -c 'import torch' 2>/dev/null || need+=(python3-torch)
fi
if ((${#need[@]})); then
  echo "ensure-deps: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi

# npm packages, exactly as locked; reinstall only when the lock file changed.
if [[ ! -f node_modules/.package-lock.json ]] || ! cmp -s package-lock.json node_modules/.ckpt-lock-stamp; then
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.ckpt-lock-stamp
fi
