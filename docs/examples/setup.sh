#!/usr/bin/env bash
# Makes the example files the documentation uses, in the current folder, from the JSON files of
# docs/examples (copy them there first). Needs `ckptscope` on the PATH; from a checkout:
#   CKPTSCOPE="node /path/to/ckptscope/js/cli.js" bash setup.sh
set -euo pipefail
ckptscope() { ${CKPTSCOPE:-command ckptscope} "$@"; }
ckptscope write model.json model.ckpt >/dev/null              # AdamW, 4 slots (one frozen, one tied), version 4
ckptscope write state.json state.ckpt >/dev/null              # its model-state file (TLSF32B)
ckptscope write unhealthy.json unhealthy.ckpt >/dev/null      # moments with NaN, a negative v, an impossible m
ckptscope write unhealthy-state.json unhealthy-state.ckpt >/dev/null
# one AdamW run saved at steps 3, 4 and 8 (tests/run/adam_run.py --kind adamw --saves 3,4,8), in run/
mkdir -p run
for s in 3 4 8; do
  ckptscope write run-step-$s.json run/step-$s.ckpt >/dev/null
  ckptscope write run-step-$s-state.json run/step-$s.tlsf >/dev/null
done
