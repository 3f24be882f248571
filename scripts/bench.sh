#!/usr/bin/env bash
# npm run bench: build what the benchmark needs (the wasm module, the native core at -O3) and
# run it. NumPy comes from Debian's python3-numpy (installed when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null || [[ ! -x /usr/bin/time ]]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-numpy time >/dev/null
fi
bash scripts/build.sh wasm >/dev/null
# configured every time (quick): a build folder made before a bench target was added knows no rule for it
cmake -S . -B build/bench -DCKPT_BENCH=ON -DCKPT_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/bench -j"$(nproc)" >/dev/null
# BENCH_ONLY=deepspeed: the DeepSpeed rows alone (bench/deepspeed.mjs)
[[ ${BENCH_ONLY:-} == deepspeed ]] && exec node bench/deepspeed.mjs
# BENCH_ONLY=dcp: the DCP rows alone (bench/dcp.mjs)
[[ ${BENCH_ONLY:-} == dcp ]] && exec node bench/dcp.mjs
exec node bench/run.mjs
