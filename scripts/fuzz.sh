#!/usr/bin/env bash
# Run the libFuzzer targets (clang, ASan + UBSan) for SECONDS each (default 20; npm test uses
# the default, three and a half minutes in all). For a long run: bash scripts/fuzz.sh 3600
# The working corpus grows in build/fuzz/work/TARGET; a crashing input lands in
# build/fuzz/findings/ and the run fails. Copy it into tests/fuzz/regressions/TARGET/ and fix.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
[[ -f build/fuzz/CMakeCache.txt ]] || CC=clang cmake -S . -B build/fuzz -DCKPT_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/fuzz -j"$(nproc)" >/dev/null
mkdir -p build/fuzz/findings
status=0
for t in inspect load roundtrip state zip pickle safetensors torch trainer deepspeed dcp; do
  work=build/fuzz/work/$t
  mkdir -p "$work"
  cp -n build/fuzz/tests/fuzz/corpus/$t/* "$work"/ 2>/dev/null || true
  log=build/fuzz/$t.log
  if build/fuzz/tests/fuzz/fuzz_$t -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 \
       -artifact_prefix=build/fuzz/findings/$t- "$work" tests/fuzz/regressions/$t >"$log" 2>&1; then
    result=ok
  else
    result=FAILED; status=1
    grep -E "ERROR|SUMMARY|artifact" "$log" | head -5 >&2
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  echo "fuzz_$t: ${runs:-?} runs in ${seconds}s, corpus $(ls "$work" | wc -l) inputs, $result"
done
exit $status
