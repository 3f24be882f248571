#!/usr/bin/env bash
# The main job: install what is missing, build the WebAssembly module if needed, and serve the
# viewer (with its built-in examples) on http://127.0.0.1:8080 (PORT overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
bash scripts/build.sh wasm >/dev/null
exec node js/cli.js serve
