#!/usr/bin/env bash
# The main job. The viewer does not exist yet: for now this builds the core and runs the
# native tests, which exercise every rule on built-in example files.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
bash scripts/build.sh
(cd build/native && ctest)
