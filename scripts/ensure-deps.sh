#!/usr/bin/env bash
# Install what the build and tests need and is missing: Debian packages with apt-get, npm
# packages from package-lock.json. Safe to run repeatedly; does nothing when all is present.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
have() { command -v "$1" >/dev/null 2>&1; }
have cmake || need+=(cmake)
have gcc || need+=(gcc)
have make || need+=(make)
have clang || need+=(clang)
[[ -e /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a ]] || need+=(libclang-rt-14-dev)
have emcc || need+=(emscripten)
have chromium || need+=(chromium)
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
