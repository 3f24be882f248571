#!/usr/bin/env python3
"""The reader column of the case table (docs/format.md 8), derived by hand from the spec's texts and
offsets, written into tests/cases/cases.json (replacing the cases it wrote before; run it again
after changing it). Each case states the outcome for all six TorchLean readers, so a difference
between readers is visible in one place.

Offsets of the bases (u64 fields, after the 7-byte magic): version 7, kind 15, beta1 23, beta2 31,
epsilon 39, weightDecay 47; v2/v3 schema at 55, v4 counter at 55 and schema at 63."""
import json
import pathlib

HERE = pathlib.Path(__file__).parent
TABLE = HERE / "cases.json"
F = "CUDA Adam checkpoint: "
READERS = ["v2", "v2-lists", "v2-v3", "v2-v4", "v2-v4-f32", "v2-v5"]
LEGACY = F + "legacy checkpoint has no random counter; stochastic training cannot be resumed exactly"
TIES_IGNORED = "this TorchLean reader has no storage sharing: the layout's ties are ignored"
EPS_1E50 = "3859002664735258655"   # bits of 1e-50: positive as binary64, 0 in binary32
CONFIG = {"kind": "adam", "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-08, "weightDecay": 0}
OTHER_CONFIG = dict(CONFIG, beta2=0.95)

BASES = {
    # slot 0 frozen, slot 1 trainable; the entry id (at 135) patched to 0 gives a frozen slot's entry
    "frozen-v2": {"kind": "optimizer", "shapes": [[2], [3]], "requiresGrad": [False, True], "representatives": None,
                  "config": CONFIG, "entries": [{"id": 1, "step": 2, "m": 0.5, "v": 0.25}]},
}

ok = {"code": 0, "warnings": []}


def ok_with(*warnings):
    return {"code": 0, "warnings": list(warnings)}


def err(code, message, offset, length=8, slot=None, **extra):
    out = {"code": code, "message": F + message, "offset": offset, "slot": slot, "length": length}
    out.update(extra)
    return out


def version(v, versions, name):
    return err(15, f"unsupported format version {v}; expected {versions}", 7,
               hint=f"TorchLean reader {name} reads versions {versions}: `ckptscope convert --for {name}` rewrites the file for it when nothing is lost")


def v2_only(v):
    return {"v2": version(v, "2", "v2"), "v2-lists": version(v, "2", "v2-lists")}


def v2_v3(v):
    return version(v, "2 or 3", "v2-v3")


def v2_v4(v, name="v2-v4"):
    return version(v, "2, 3, or 4", name)


def all_readers(outcome):
    return {r: outcome for r in READERS}


def eps_e32(offset=39):
    return err(21, "`epsilon` must remain finite and positive in float32", offset)


def eps_ed(offset=39):
    return err(21, "`epsilon` must remain finite and positive in Runtime.Autograd.LibTorch.Dtype.float32", offset)


config_differs = err(25, "checkpoint belongs to a different optimizer configuration", 15, 40)

CASES = [
    # ---- with a destination ----
    {"name": "readers: a v2 file loads in all six", "file": {"base": "model-v2"}, "expect": {"like": "model-v2"},
     "readers": all_readers(ok)},
    {"name": "readers: a v2 file with epsilon 1e-50 loads in the four oldest (E64), not in v2-v4-f32 (E32) nor v2-v5 (ED)",
     "file": {"base": "model-v2", "patch": [[39, EPS_1E50]]}, "expect": {"like": "model-v2"},
     "readers": {"v2": ok, "v2-lists": ok, "v2-v3": ok, "v2-v4": ok, "v2-v4-f32": eps_e32(), "v2-v5": eps_ed()}},
    {"name": "readers: config and shape both differ: the shape in v2 and v2-lists (config after the file), the config in the others",
     "file": {"base": "model-v2"},
     "expect": {"shapes": [[3, 2], [2, 3], [3]], "requiresGrad": [True, True, True], "representatives": None, "config": OTHER_CONFIG},
     "readers": {"v2": err(8, "shape mismatch for parameter 0 (file=#[2, 3], expected=#[3, 2])", 71, 16, 0),
                 "v2-lists": err(8, "shape mismatch for parameter 0 (file=[2, 3], expected=[3, 2])", 71, 16, 0),
                 "v2-v3": config_differs, "v2-v4": config_differs, "v2-v4-f32": config_differs, "v2-v5": config_differs}},
    {"name": "readers: a config mismatch alone fails everywhere, in v2 only after the whole file",
     "file": {"base": "model-v2"}, "expect": {"like": "model-v2", "config": OTHER_CONFIG},
     "readers": all_readers(config_differs)},
    {"name": "readers: v2 checks trailing bytes before the config, the others the config first",
     "file": {"base": "model-v2", "append": "00"}, "expect": {"like": "model-v2", "config": OTHER_CONFIG},
     "readers": {"v2": err(2, "trailing bytes after final state entry", 375, 1),
                 "v2-lists": err(2, "trailing bytes after final state entry", 375, 1),
                 "v2-v3": config_differs, "v2-v4": config_differs, "v2-v4-f32": config_differs, "v2-v5": config_differs}},
    {"name": "readers: a v3 file in v2 and v2-lists", "file": {"base": "model"}, "expect": {"like": "model"},
     "readers": dict(v2_only(3), **{"v2-v3": ok, "v2-v4": ok, "v2-v4-f32": ok, "v2-v5": ok})},
    {"name": "readers: a v4 file in v2-v3 (expected 2 or 3)", "file": {"base": "model-v4"}, "expect": {"like": "model-v4"},
     "readers": dict(v2_only(4), **{"v2-v3": v2_v3(4), "v2-v4": ok, "v2-v4-f32": ok, "v2-v5": ok})},
    {"name": "readers: a v5 file in v2-v4 (expected 2, 3, or 4)", "file": {"base": "model-v5-counter"}, "expect": {"like": "model-v5-counter"},
     "readers": dict(v2_only(5), **{"v2-v3": v2_v3(5), "v2-v4": v2_v4(5), "v2-v4-f32": v2_v4(5, "v2-v4-f32"), "v2-v5": ok})},
    {"name": "readers: a float64 v5 file only in v2-v5", "file": {"base": "model-f64"}, "expect": {"like": "model-f64", "dtype": "float64"},
     "readers": dict(v2_only(5), **{"v2-v3": v2_v3(5), "v2-v4": v2_v4(5), "v2-v4-f32": v2_v4(5, "v2-v4-f32"), "v2-v5": ok})},
    {"name": "readers: a float64 destination: only v2-v5 has a dtype step",
     "file": {"base": "model-v2"}, "expect": {"like": "model-v2", "dtype": "float64"},
     "readers": {"v2": ok, "v2-lists": ok, "v2-v3": ok, "v2-v4": ok, "v2-v4-f32": ok,
                 "v2-v5": err(17, "moment dtype differs from the destination", 7)}},
    {"name": "readers: a tied layout: v2-v3 on refuse a v2 file, v2 and v2-lists ignore the ties",
     "file": {"base": "model-v2"}, "expect": {"like": "model"},
     "readers": {"v2": ok_with(TIES_IGNORED), "v2-lists": ok_with(TIES_IGNORED),
                 "v2-v3": err(14, "version 2 cannot restore shared parameter histories", 7),
                 "v2-v4": err(14, "version 2 cannot restore shared parameter histories", 7),
                 "v2-v4-f32": err(14, "version 2 cannot restore shared parameter histories", 7),
                 "v2-v5": err(14, "version 2 cannot restore shared parameter histories", 7)}},
    {"name": "readers: a frozen slot's entry: 'state exists for frozen parameter' in v2, 'does not own optimizer state' later",
     "file": {"base": "frozen-v2", "patch": [[135, 0]]}, "expect": {"like": "frozen-v2"},
     "readers": {"v2": err(29, "state exists for frozen parameter 0", 135, 8, 0),
                 "v2-lists": err(29, "state exists for frozen parameter 0", 135, 8, 0),
                 **{r: err(29, "parameter 0 does not own optimizer state", 135, 8, 0) for r in READERS[2:]}}},
    {"name": "readers: the entry count: trainableCount in v2 (3 for a tied layout it sees untied), optimizerStateCount later",
     "file": {"base": "model-v2", "patch": [[175, 2]]}, "expect": {"like": "model-v2"},
     "readers": all_readers(err(26, "expected 3 moment entries, got 2", 175))},
    {"name": "readers: a tied layout counts trainable slots in v2 (3 entries wanted), the others refuse the v2 file first",
     "file": {"base": "model-v2", "patch": [[175, 2]]}, "expect": {"like": "model"},
     "readers": {"v2": dict(err(26, "expected 3 moment entries, got 2", 175), warnings=[TIES_IGNORED]),
                 "v2-lists": dict(err(26, "expected 3 moment entries, got 2", 175), warnings=[TIES_IGNORED]),
                 **{r: err(14, "version 2 cannot restore shared parameter histories", 7) for r in READERS[2:]}}},
    {"name": "readers: a v2 file into a destination that keeps a counter: the legacy warning only where the reader knows counters",
     "file": {"base": "model-v2"}, "expect": {"like": "model-v2", "keepsRandomCounter": True},
     "readers": {"v2": ok, "v2-lists": ok, "v2-v3": ok, "v2-v4": ok_with(LEGACY), "v2-v4-f32": ok_with(LEGACY), "v2-v5": ok_with(LEGACY)}},
    {"name": "readers: a v4 file into a destination without a counter", "file": {"base": "model-v4"},
     "expect": {"like": "model-v4", "keepsRandomCounter": False},
     "readers": dict(v2_only(4), **{"v2-v3": v2_v3(4), **{r: err(33, "destination has no random-counter reference", 55)
                                                         for r in ["v2-v4", "v2-v4-f32", "v2-v5"]}})},
]

# ---- without a destination: which readers can read the file at all ----
reads = {"code": 0}
INSPECT = [
    {"name": "readers without a destination: a v2 file", "file": {"base": "model-v2"},
     "inspect": {"code": 0, "readers": all_readers(reads)}},
    {"name": "readers without a destination: a v3 file", "file": {"base": "model"},
     "inspect": {"code": 0, "readers": dict(v2_only(3), **{"v2-v3": reads, "v2-v4": reads, "v2-v4-f32": reads, "v2-v5": reads})}},
    {"name": "readers without a destination: a v4 file", "file": {"base": "model-v4"},
     "inspect": {"code": 0, "readers": dict(v2_only(4), **{"v2-v3": v2_v3(4), "v2-v4": reads, "v2-v4-f32": reads, "v2-v5": reads})}},
    {"name": "readers without a destination: a float64 file", "file": {"base": "model-f64"},
     "inspect": {"code": 0, "readers": dict(v2_only(5), **{"v2-v3": v2_v3(5), "v2-v4": v2_v4(5), "v2-v4-f32": v2_v4(5, "v2-v4-f32"),
                                                           "v2-v5": reads})}},
    {"name": "readers without a destination: epsilon 1e-50 in a v2 file",
     "file": {"base": "model-v2", "patch": [[39, EPS_1E50]]},
     "inspect": dict(eps_ed(), readers={"v2": reads, "v2-lists": reads, "v2-v3": reads, "v2-v4": reads, "v2-v4-f32": eps_e32(),
                                        "v2-v5": eps_ed()})},
    {"name": "readers without a destination: epsilon 1e-50 and trailing bytes: the older readers read on and meet the trailing byte",
     "file": {"base": "model-v2", "patch": [[39, EPS_1E50]], "append": "00"},
     "inspect": dict(eps_ed(), readers={**{r: err(2, "trailing bytes after final state entry", 375, 1) for r in READERS[:4]},
                                        "v2-v4-f32": eps_e32(), "v2-v5": eps_ed()})},
    {"name": "readers without a destination: a frozen slot's entry in each reader's words",
     "file": {"base": "frozen-v2", "patch": [[135, 0]]},
     "inspect": dict(err(29, "parameter 0 does not own optimizer state", 135, 8, 0),
                     readers={"v2": err(29, "state exists for frozen parameter 0", 135, 8, 0),
                              "v2-lists": err(29, "state exists for frozen parameter 0", 135, 8, 0),
                              **{r: err(29, "parameter 0 does not own optimizer state", 135, 8, 0) for r in READERS[2:]}})},
    {"name": "readers without a destination: a file broken before its version breaks for every reader",
     "file": {"base": "model", "truncate": 10},
     "inspect": dict(err(1, "truncated checkpoint (wanted 8 bytes, got 3)", 7, 3),
                     readers=all_readers(err(1, "truncated checkpoint (wanted 8 bytes, got 3)", 7, 3)))},
]


def main():
    text = TABLE.read_text()
    table = json.loads(text)
    names = {c["name"] for c in CASES + INSPECT}
    table["bases"].update(BASES)
    table["cases"] = [c for c in table["cases"] if c["name"] not in names] + CASES + INSPECT
    lines = ["{", f'  "about": {json.dumps(table["about"])},', '  "bases": {']
    lines += [f'    {json.dumps(k)}: {json.dumps(v)}{"," if i < len(table["bases"]) - 1 else ""}'
              for i, (k, v) in enumerate(table["bases"].items())]
    lines += ["  },", '  "cases": [']
    lines += [f'    {json.dumps(c)}{"," if i < len(table["cases"]) - 1 else ""}' for i, c in enumerate(table["cases"])]
    lines += ["  ]", "}"]
    TABLE.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
