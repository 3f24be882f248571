#!/usr/bin/env bash
# Every test: native (ctest, under ASan + UBSan), the Node suites (API, CLI, properties,
# package), the browser suite, and a bounded fuzzing run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh test
bash scripts/build.sh
bash scripts/build.sh family
echo "== the C sources against .clang-format"
clang-format --dry-run --Werror $(git ls-files 'src/*.[ch]') wasm/*.c tests/c/*.c tests/c/*.h tests/fuzz/*.c bench/*.c
echo "== native tests (ctest, ASan + UBSan)"
(cd build/native && ctest --output-on-failure)
echo "== fuzzing (libFuzzer, ASan + UBSan; 20 s per target)"
bash scripts/fuzz.sh 20
echo "== the documentation's examples, run and compared with what the pages show"
node docs/examples/verify.mjs
echo "== Node and browser tests (node --test; the browser suite drives Debian's Chromium)"
node --test --test-reporter=spec tests/js/*.test.mjs tests/browser/*.test.mjs
