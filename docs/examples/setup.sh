#!/usr/bin/env bash
# Makes the example files the documentation uses, in the current folder, from the JSON files of
# docs/examples (copy them there first). Runs `ckptscope` from the PATH, else the checkout's (or
# package's) js/cli.js beside this script; CKPTSCOPE="node /path/to/ckptscope/js/cli.js" chooses.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ -z ${CKPTSCOPE:-} ]]; then
  if command -v ckptscope >/dev/null; then CKPTSCOPE="command ckptscope"; else CKPTSCOPE="node $here/../../js/cli.js"; fi
fi
ckptscope() { $CKPTSCOPE "$@"; }
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
# a DeepSpeed ZeRO-2 save_dir of two ranks, written by DeepSpeed v0.14.4 (docs/deepspeed.md)
rm -rf deepspeed && cp -r "$here/deepspeed" deepspeed
# a ZeRO-2 save_dir saved after steps 2, 3 and 4 of torch's AdamW (the last on 3 ranks), written by
# tests/c/deepspeed_seeds.py's ZeRO writer (its runs/zero2)
rm -rf deepspeed-run && cp -r "$here/deepspeed-run" deepspeed-run
# a PyTorch distributed checkpoint of two ranks, written by torch 1.13's save_state_dict (docs/distributed.md)
rm -rf dcp-torch113 && cp -r "$here/dcp-torch113" dcp-torch113
# a DCP folder of torch >= 2.3's classes: b.weight column-sharded over two ranks, c.weight tied to
# it, a.weight frozen (tests/c/dcp_core_seeds.py's `columns`, written with torch's own torch.save)
rm -rf dcp-columns && cp -r "$here/dcp-columns" dcp-columns
