#!/usr/bin/env bash
# The main job: install what is missing, build the WebAssembly module if needed, and serve the
# viewer (with its built-in examples) on http://127.0.0.1:8080 (PORT overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
# A first run is silent for a while otherwise: say what it is doing (stderr; stdout is the URL).
[[ -f node_modules/.package-lock.json ]] || echo "ckptscope: installing the npm packages (first run)…" >&2
bash scripts/ensure-deps.sh
if [[ ! -f js/ckptscope.wasm || ! -f build/wasm/CMakeCache.txt ]]; then
  echo "ckptscope: building the WebAssembly module (first run, ~15 s)…" >&2
fi
bash scripts/build.sh wasm >/dev/null
exec node js/cli.js serve
