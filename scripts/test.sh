#!/usr/bin/env bash
# Every test: native (ctest, under ASan + UBSan), then the JS suites when they exist.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
bash scripts/build.sh
(cd build/native && ctest --output-on-failure)
