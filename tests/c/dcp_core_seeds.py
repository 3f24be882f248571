"""DCP folders of torch >= 2.0's classes for tests/c/test_dcp.c (format.md 12), written without
torch.distributed.checkpoint (torch >= 2.0 cannot be installed here): .metadata pickled from
stand-in classes registered under torch's module and class names (dataclasses through
copyreg.__newobj__ and BUILD, TensorProperties' 5-tuple, torch.Size, torch.{dtype},
_get_layout, the memory format through builtins.getattr), and each record torch.save of its
chunk or value, as _write_item writes it (torch 1.13's own torch.save, to a buffer: "archive/").

Writes OUT/{case}/ for each case, and OUT/manifest.json: per case what the core must say (its
first diagnostic: 12.5's check, its code, its exact text; or the facts of a valid folder).

usage: dcp_core_seeds.py OUT
"""
import copy
import enum
import io
import json
import os
import pickle
import sys
import types

import torch

NEW = "torch.distributed.checkpoint.metadata"
FS = "torch.distributed.checkpoint.filesystem"
OLD_ST = "torch.distributed._shard.sharded_tensor.metadata"

# codes of src/ckptscope.h
E_FOLDER, E_METADATA, E_STORAGE, E_RECORD, E_CHUNKS, E_STATE = 84, 85, 86, 87, 88, 89


def module(name):
    m = sys.modules.get(name)
    if m is None:
        m = types.ModuleType(name)
        sys.modules[name] = m
    return m


def register(mod, cls, name=None):
    name = name or cls.__name__
    cls.__module__ = mod
    cls.__qualname__ = name
    setattr(module(mod), name, cls)
    return cls


# ---- torch's names, as pickle writes them ----
class FakeSize(tuple):
    """torch.Size: REDUCE of the class with one tuple"""

    def __reduce__(self):
        return (FakeSize, (tuple(self),))


FakeSize.__module__, FakeSize.__qualname__ = "torch", "Size"


class FakeDtype:
    """torch.float32 and the others: a GLOBAL"""

    def __init__(self, name):
        self.name = name

    def __reduce__(self):
        return self.name


FakeDtype.__module__ = "torch"
DTYPES = {n: FakeDtype(n) for n in ("float32", "bfloat16", "float16", "int64")}


def dtype(name):
    return DTYPES[name]


# pickle finds torch.Size and torch.float32 through sys.modules["torch"]: the real one writes the
# records, a stand-in holds these names while .metadata is dumped
class Dumping:
    def __enter__(self):
        self.saved = sys.modules.get("torch")
        fake = types.ModuleType("torch")
        fake.Size = FakeSize
        for n, d in DTYPES.items():
            setattr(fake, n, d)
        sys.modules["torch"] = fake
        return self

    def __exit__(self, *a):
        sys.modules["torch"] = self.saved


def _get_layout(name):
    return name


_get_layout.__module__ = "torch.serialization"
_get_layout.__qualname__ = "_get_layout"
module("torch.serialization")  # the real one is imported; _get_layout is replaced while dumping


class Layout:
    def __reduce__(self):
        return (_get_layout, ("torch.strided",))


class MemFormat(enum.Enum):
    TORCH_CONTIGUOUS_FORMAT = 0
    TORCH_CHANNELS_LAST = 1
    TORCH_PRESERVE_FORMAT = 2


class Contiguous:
    def __init__(self, cls):
        self.cls = cls

    def __reduce__(self):
        return (getattr, (self.cls, "TORCH_CONTIGUOUS_FORMAT"))


class TensorProperties:
    def __init__(self, dt):
        self.dt = dt

    def __reduce_ex__(self, proto):
        import copyreg

        return (copyreg.__newobj__, (type(self),), (dtype(self.dt), Layout(), False, Contiguous(self.mem), False))


def dataclass_of(mod, name, fields):
    cls = type(name, (), {})
    register(mod, cls)

    def make(**kw):
        o = cls.__new__(cls)
        for f in fields:
            if f in kw:
                setattr(o, f, kw[f])
        return o

    return cls, make


def classes(new_properties):
    """The stand-ins: torch >= 2.3 (TensorProperties in checkpoint.metadata) or 2.0-2.2."""
    ns = types.SimpleNamespace()
    ns.Metadata, ns.metadata = dataclass_of(NEW, "Metadata", ["state_dict_metadata", "planner_data", "storage_data", "storage_meta", "version"])
    ns.TSM, ns.tsm = dataclass_of(NEW, "TensorStorageMetadata", ["properties", "size", "chunks"])
    ns.CSM, ns.csm = dataclass_of(NEW, "ChunkStorageMetadata", ["offsets", "sizes"])
    ns.BSM, ns.bsm = dataclass_of(NEW, "BytesStorageMetadata", [])
    ns.MI, ns.mi = dataclass_of(NEW, "MetadataIndex", ["fqn", "offset", "index"])
    ns.SI, ns.si = dataclass_of(FS, "_StorageInfo", ["relative_path", "offset", "length", "transform_descriptors"])
    ns.SM, ns.sm = dataclass_of(NEW, "StorageMeta", ["checkpoint_id", "save_id", "load_id", "modules"])
    pmod, mname = (NEW, "_MEM_FORMAT_ENCODING") if new_properties else (OLD_ST, "MEM_FORMAT_ENCODING")
    props = type("TensorProperties", (TensorProperties,), {})
    register(pmod, props, "TensorProperties")
    mem = enum.Enum(mname, {"TORCH_CONTIGUOUS_FORMAT": 0, "TORCH_CHANNELS_LAST": 1, "TORCH_PRESERVE_FORMAT": 2})
    register(pmod, mem, mname)
    props.mem = mem
    ns.props = props
    return ns


def record(value):
    b = io.BytesIO()
    torch.save(value, b)
    return b.getvalue()


# ---- a checkpoint as data: keys in metadata order, each a tensor (chunks) or a value ----
def base_items():
    """A small model (bare FQNs, torchtitan's convention) and an optimizer in form F, as
    get_state_dict(..., flatten_optimizer_state_dict=True) gives it; b.weight row-sharded over 2
    ranks, a.weight frozen. planner_data's order (the saved dict's walk) is b.weight first."""
    bw = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    aw = torch.ones(4)
    m = bw * 0.5
    v = bw * 0.25
    items = [
        ("a.weight", "tensor", aw, [((0,), (4,), 0)]),
        ("b.weight", "tensor", bw, [((0, 0), (1, 3), 0), ((1, 0), (1, 3), 1)]),
        ("optimizer.state.b.weight.step", "tensor", torch.tensor(3.0), [((), (), 0)]),
        ("optimizer.state.b.weight.exp_avg", "tensor", m, [((0, 0), (1, 3), 0), ((1, 0), (1, 3), 1)]),
        ("optimizer.state.b.weight.exp_avg_sq", "tensor", v, [((0, 0), (1, 3), 0), ((1, 0), (1, 3), 1)]),
        ("optimizer.param_groups.b.weight.lr", "bytes", 0.001, None),
        ("optimizer.param_groups.b.weight.betas", "bytes", (0.9, 0.95), None),
        ("optimizer.param_groups.b.weight.eps", "bytes", 1e-08, None),
        ("optimizer.param_groups.b.weight.weight_decay", "bytes", 0.1, None),
    ]
    planner = ["b.weight", "a.weight"] + [k for k, *_ in items[2:]]
    return items, planner


def write(out, name, items, planner, new_properties=True, version="1.0.0", storage_meta=True, mutate=None,
          dtypes=None):
    ns = classes(new_properties)
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    files = {}  # rank -> bytearray
    sdm = {}
    storage = []  # (MetadataIndex, _StorageInfo) in order
    for key, kind, value, chunks in items:
        if kind == "bytes":
            sdm[key] = ns.bsm()
            data = files.setdefault(0, bytearray())
            rec = record(value)
            storage.append((ns.mi(fqn=key, index=None), ns.si(relative_path="__0_0.distcp", offset=len(data), length=len(rec))))
            data += rec
            continue
        csms = []
        for offsets, sizes, rank in chunks:
            csms.append(ns.csm(offsets=FakeSize(offsets), sizes=FakeSize(sizes)))
            sl = tuple(slice(o, o + s) for o, s in zip(offsets, sizes))
            piece = value[sl].clone() if sl else value.clone()
            data = files.setdefault(rank, bytearray())
            rec = record(piece)
            storage.append((ns.mi(fqn=key, offset=FakeSize(offsets), index=len(csms) - 1),
                            ns.si(relative_path=f"__{rank}_0.distcp", offset=len(data), length=len(rec))))
            data += rec
        dt = (dtypes or {}).get(key, str(value.dtype).replace("torch.", ""))
        sdm[key] = ns.tsm(properties=ns.props(dt), size=FakeSize(tuple(value.shape)), chunks=csms)
    kw = dict(state_dict_metadata=sdm, storage_data=None,
              planner_data={k: tuple(k.split(".")) for k in planner} if planner is not None else None)
    if storage_meta:
        kw["storage_meta"] = ns.sm(checkpoint_id=None, save_id="5c0ad4e2", load_id=None, modules=[])
    if version is not None:
        kw["version"] = version
    ctx = types.SimpleNamespace(ns=ns, sdm=sdm, storage=storage, files=files, kw=kw, folder=folder)
    if mutate:
        mutate(ctx)
    kw["storage_data"] = dict(ctx.storage) if not isinstance(ctx.storage, dict) else ctx.storage
    root = ctx.kw.get("root") or ns.metadata(**{k: v for k, v in kw.items() if k != "root"})
    serialization = sys.modules["torch.serialization"]
    saved_layout = serialization._get_layout
    serialization._get_layout = _get_layout
    try:
        with Dumping():
            meta = pickle.dumps(root, protocol=4)
    finally:
        serialization._get_layout = saved_layout
    with open(os.path.join(folder, ".metadata"), "wb") as f:
        f.write(meta)
    for rank, data in ctx.files.items():
        with open(os.path.join(folder, f"__{rank}_0.distcp"), "wb") as f:
            f.write(data)
    return folder


def storage_at(ctx, fqn, offsets=None):
    for k, (mi, si) in enumerate(ctx.storage):
        if mi.fqn == fqn and (offsets is None or tuple(getattr(mi, "offset", ())) == tuple(offsets)):
            return k
    raise KeyError(fqn)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    manifest = {}
    items, planner = base_items()

    # valid folders
    write(out, "v23", items, planner)
    manifest["v23"] = {"classes": "torch>=2.3", "version": "1.0.0", "plannerData": True, "form": "F",
                       "slots": ["b.weight", "a.weight"], "trainable": [True, False], "groups": 1,
                       "note": "DCP: the flattened optimizer state keeps no group boundaries: parameters with equal "
                               "hyperparameters form one group (1 groups)", "warnings": [],
                       "config": {"beta1": 0.9, "beta2": 0.95, "epsilon": 1e-08, "weightDecay": 0.1}}
    write(out, "v20", items, None, new_properties=False, version=None, storage_meta=False)
    manifest["v20"] = {"classes": "torch 2.0-2.2", "version": None, "plannerData": False, "form": "F",
                       "slots": ["a.weight", "b.weight"], "trainable": [False, True], "groups": 1,
                       "warnings": ["DCP: ckpt keeps no planner_data: slots follow the metadata's key order, which is "
                                    "module order only when one rank wrote every unsharded item (give --names "
                                    "NAMES.json)"]}

    def case(name, check, code, text, mutate=None, its_items=None, **kw):
        write(out, name, its_items or items, planner, mutate=mutate, **kw)
        manifest[name] = {"check": check, "code": code, "text": text}

    # statistics through runs: b.weight and its moments sharded on dim 1 (2 runs of 2 and 2 runs
    # of 1 element per row), and c.weight, without state, equal to b.weight bit for bit: its alias
    # (12.4's ties), while a.weight stays frozen
    bw = items[1][2]
    cols = [((0, 0), (2, 2), 0), ((0, 2), (2, 1), 1)]
    its = [items[0], (items[1][0], "tensor", bw, cols), ("c.weight", "tensor", bw.clone(), [((0, 0), (2, 3), 1)])]
    its += [(k, kind, v, cols if k.endswith(("exp_avg", "exp_avg_sq")) else ch) for k, kind, v, ch in items[2:]]
    write(out, "columns", its, ["b.weight", "a.weight", "c.weight"] + planner[2:])

    def facts(t):
        t = t.double().flatten()
        return {"min": t.min().item(), "max": t.max().item(), "mean": t.mean().item(),
                "rms": (t * t).mean().sqrt().item(), "negative": int((t < 0).sum().item())}

    manifest["columns"] = {"classes": "torch>=2.3", "version": "1.0.0", "plannerData": True, "form": "F",
                           "slots": ["b.weight", "a.weight", "c.weight"], "trainable": [True, False, False],
                           "groups": 1, "warnings": [],
                           "roles": ["owner", "frozen", "tied"], "representatives": [0, None, 0],
                           "m": facts(items[3][2]), "v": facts(items[4][2])}

    # 2, 3
    def not_metadata(ctx):
        ctx.kw["root"] = {"state_dict_metadata": {}}

    case("not-metadata", 2, E_METADATA, "DCP: .metadata holds a dict, not a DCP Metadata", not_metadata)

    def no_storage(ctx):
        ctx.kw.pop("storage_data")
        ctx.kw["root"] = ctx.ns.metadata(**ctx.kw)

    case("no-storage-data", 3, E_METADATA, "DCP: .metadata: no storage_data", no_storage)

    def bad_sizes(ctx):
        ctx.sdm["b.weight"].chunks[1].sizes = [1, 3]

    case("bad-sizes", 3, E_METADATA,
         "DCP: .metadata: state_dict_metadata[b.weight].chunks[1].sizes is a list, expected a torch.Size", bad_sizes)
    # 4, 5: warnings
    def foreign(ctx):
        ctx.kw["planner_data"]["a.weight"] = (os.system,)

    case("foreign", 4, 0, "DCP: .metadata has version 2.0.0; ckptscope reads version 1.0.0 and unversioned metadata",
         foreign, version="2.0.0")
    manifest["foreign"]["also"] = ["DCP: .metadata names Python callables that pickle.load runs, beyond DCP's own "
                                   "classes: \"posix.system\""]

    # 6, 7, 8, 9
    def drop(ctx):
        del ctx.storage[storage_at(ctx, "b.weight", (1, 0))]

    case("no-entry", 6, E_STORAGE, "DCP: b.weight: chunk at #[1, 0] has no storage entry", drop)

    def twice(ctx):
        k = storage_at(ctx, "a.weight")
        mi, si = ctx.storage[k]
        ctx.storage.insert(k + 1, (ctx.ns.mi(fqn="a.weight", offset=FakeSize((0,)), index=0), copy.copy(si)))

    case("twice", 7, E_STORAGE, "DCP: storage_data lists a.weight at #[0] twice", twice)

    def ghost(ctx):
        mi, si = ctx.storage[storage_at(ctx, "a.weight")]
        ctx.storage.append((ctx.ns.mi(fqn="ghost.weight", offset=FakeSize((0,)), index=0), copy.copy(si)))

    case("ghost", 8, 0, "DCP: storage_data names ghost.weight at #[0], which state_dict_metadata has no chunk for", ghost)

    def outside(ctx):
        ctx.storage[storage_at(ctx, "a.weight")][1].relative_path = "../__0_0.distcp"

    case("outside", 9, E_FOLDER,
         "DCP: the storage entry of a.weight names ../__0_0.distcp, which is not a file name inside ckpt", outside)

    # 12: a.weight's record made longer: it reaches into the next record of rank 0's file (b.weight's
    # first chunk, which starts where a.weight's record ended)
    ends = {}

    def overlap(ctx):
        si = ctx.storage[storage_at(ctx, "a.weight")][1]
        ends["a"] = si.offset + si.length
        si.length += 10

    write(out, "overlap", items, planner, mutate=overlap)
    manifest["overlap"] = {"check": 12, "code": E_STORAGE,
                           "text": f"DCP: __0_0.distcp: the records of a.weight and b.weight overlap at byte {ends['a']}"}

    def zstd(ctx):
        ctx.storage[storage_at(ctx, "a.weight")][1].transform_descriptors = ["stream.zstd/1"]

    case("zstd", 13, E_STORAGE, "DCP: a.weight: stored through stream.zstd/1; ckptscope undoes no stream transform", zstd)

    # 15, 16, 17: records that are not the chunk
    def dict_record(ctx):
        # a.weight's record holds a dict: rewrite rank 0's first record
        k = storage_at(ctx, "a.weight")
        rec = record({"not": "a tensor"})
        data = ctx.files[0]
        si = ctx.storage[k][1]
        old = bytes(data[si.offset:si.offset + si.length])
        ctx.files[0] = data[:si.offset] + rec + data[si.offset + si.length:]
        delta = len(rec) - len(old)
        for mi, s in ctx.storage:
            if s.relative_path == "__0_0.distcp" and s.offset > si.offset:
                s.offset += delta
        si.length = len(rec)

    write(out, "not-tensor", items, planner, mutate=dict_record)
    manifest["not-tensor"] = {"check": 15, "code": E_RECORD,
                              "text": "DCP: a.weight: the record at byte 0 of __0_0.distcp holds a dict, not a tensor"}

    def wrong_size(ctx):
        ctx.sdm["a.weight"].size = FakeSize((5,))
        ctx.sdm["a.weight"].chunks[0].sizes = FakeSize((5,))

    case("wrong-size", 16, E_RECORD, "DCP: a.weight: the record at byte 0 of __0_0.distcp holds #[4], its chunk is #[5]",
         wrong_size)
    case("dtype", 17, 0, "DCP: a.weight: the record at byte 0 of __0_0.distcp holds float32, the metadata says bfloat16",
         dtypes={"a.weight": "bfloat16"})

    # 19, 20, 21
    def chunk_outside(ctx):
        ctx.sdm["b.weight"].chunks[1].offsets = FakeSize((2, 0))
        ctx.storage[storage_at(ctx, "b.weight", (1, 0))][0].offset = FakeSize((2, 0))

    case("chunk-outside", 19, E_CHUNKS, "DCP: b.weight: chunk at #[2, 0] of size #[1, 3] lies outside #[2, 3]", chunk_outside)

    def chunk_overlap(ctx):
        ctx.sdm["b.weight"].chunks[1].offsets = FakeSize((0, 1))
        ctx.sdm["b.weight"].chunks[1].sizes = FakeSize((1, 2))
        ctx.storage[storage_at(ctx, "b.weight", (1, 0))][0].offset = FakeSize((0, 1))

    case("chunk-overlap", 16, E_RECORD,
         "DCP: b.weight: the record at byte 0 of __1_0.distcp holds #[1, 3], its chunk is #[1, 2]", chunk_overlap)
    manifest["chunk-overlap"]["also"] = ["DCP: b.weight: chunks at #[0, 0] and #[0, 1] overlap"]

    def uncovered(ctx):
        ctx.sdm["b.weight"].size = FakeSize((3, 3))

    case("uncovered", 21, E_CHUNKS, "DCP: b.weight: its chunks cover 6 of 9 elements", uncovered)
    manifest["uncovered"]["also"] = ["DCP: b.weight: exp_avg is #[2, 3], the parameter is #[3, 3]"]

    # 22, 23, 24
    its = items + [("optimizer.state.c.weight.exp_avg", "tensor", torch.zeros(2), [((0,), (2,), 0)])]
    case("orphan", 22, E_STATE, "DCP: optimizer state for c.weight, which the model part does not hold", its_items=its)
    its = [i if i[0] != "optimizer.state.b.weight.exp_avg_sq" else
           (i[0], "tensor", torch.zeros(3, 2), [((0, 0), (3, 2), 0)]) for i in items]
    case("moment-shape", 23, E_STATE, "DCP: b.weight: exp_avg_sq is #[3, 2], the parameter is #[2, 3]", its_items=its)
    its = [i if i[0] != "optimizer.state.b.weight.step" else (i[0], "tensor", torch.tensor(-1.5), [((), (), 0)])
           for i in items]
    case("bad-step", 24, E_STATE, "DCP: b.weight: step -1.5 is not a step count", its_items=its)

    # 18: a bytes item whose record names a callable (pickled by reference)
    its = items + [("train_state", "bytes", {"hook": os.getcwd}, None)]
    case("callable", 18, 0, "DCP: train_state: the record at byte {} of __0_0.distcp names Python callables that "
         "DCP's load runs (bytes items load with weights_only=False): \"posix.getcwd\"", its_items=its)
    # its offset: after every other bytes item and rank 0's tensors, as written
    with open(os.path.join(out, "callable", "__0_0.distcp"), "rb") as f:
        data = f.read()
    tail = record({"hook": os.getcwd})
    manifest["callable"]["text"] = manifest["callable"]["text"].format(len(data) - len(tail))

    # form N (torch >= 2.4's nested keys), two groups: 25, 26, 27; and 28 on a folder of its own
    def nested(group_of, steps, params, zero=False):
        bw = items[1][2]
        out_items = [items[0], items[1], ("c.weight", "tensor", torch.full((2,), 2.0), [((0,), (2,), 0)])]
        for fqn, shape in (("b.weight", (2, 3)), ("c.weight", (2,))):
            m = torch.zeros(shape) if zero else torch.full(shape, 0.5)
            out_items += [(f"optim.state.{fqn}.step", "tensor", torch.tensor(float(steps[fqn])), [((), (), 0)]),
                          (f"optim.state.{fqn}.exp_avg", "tensor", m, [(tuple(0 for _ in shape), shape, 0)]),
                          (f"optim.state.{fqn}.exp_avg_sq", "tensor", m.clone(), [(tuple(0 for _ in shape), shape, 0)])]
        for g, names in enumerate(params):
            out_items += [(f"optim.param_groups.{g}.lr", "bytes", 0.001 * (g + 1), None),
                          (f"optim.param_groups.{g}.betas", "bytes", (0.9, 0.999), None),
                          (f"optim.param_groups.{g}.params", "bytes", names, None)]
        return out_items

    its = nested(None, {"b.weight": 2, "c.weight": 2}, [["b.weight"], ["b.weight", "c.weight"]])
    case("two-groups", 25, E_STATE, "DCP: b.weight is listed in parameter groups 0 and 1", its_items=its)
    its = nested(None, {"b.weight": 2, "c.weight": 2}, [["b.weight"]])
    case("no-group", 26, 0, "DCP: c.weight has optimizer state but no parameter group lists it", its_items=its)
    its = nested(None, {"b.weight": 2, "c.weight": 3}, [["b.weight", "c.weight"]])
    case("steps", 27, 0, "DCP: group 0: c.weight is at step 3, b.weight at step 2", its_items=its)
    its = nested(None, {"b.weight": 1, "c.weight": 1}, [["b.weight", "c.weight"]], zero=True)
    case("never-stepped", 28, 0, "DCP: b.weight: step 1 and all-zero moments: the state get_optimizer_state_dict "
         "creates for an optimizer that never stepped", its_items=its)
    manifest["never-stepped"]["stats"] = True
    its = nested(None, {"b.weight": 2, "c.weight": 2}, [["b.weight"], ["c.weight"]])
    write(out, "nested", its, None, version=None, storage_meta=False)
    manifest["nested"] = {"classes": "torch>=2.3", "version": None, "plannerData": False, "form": "N",
                          "slots": ["a.weight", "b.weight", "c.weight"], "trainable": [False, True, True],
                          "groups": 2, "groupLr": [0.001, 0.002], "groupOf": [None, 0, 1],
                          "warnings": ["DCP: ckpt keeps no planner_data: slots follow the metadata's key order, which "
                                       "is module order only when one rank wrote every unsharded item (give --names "
                                       "NAMES.json)"]}
    # form N23 (torch 2.0-2.3): param_groups one bytes item, the whole list
    its = [i for i in nested(None, {"b.weight": 2, "c.weight": 2}, [["b.weight"], ["c.weight"]])
           if not i[0].startswith("optim.param_groups")]
    its.append(("optim.param_groups", "bytes", [{"lr": 0.001, "betas": (0.9, 0.999), "params": ["b.weight"]},
                                                 {"lr": 0.002, "betas": (0.9, 0.999), "params": ["c.weight"]}], None))
    write(out, "n23", its, [k for k, *_ in its], new_properties=False)
    manifest["n23"] = {"classes": "torch 2.0-2.2", "version": "1.0.0", "plannerData": True, "form": "N23",
                       "slots": ["a.weight", "b.weight", "c.weight"], "trainable": [False, True, True],
                       "groups": 2, "groupLr": [0.001, 0.002], "groupOf": [None, 0, 1], "warnings": []}

    # an optimizer part alone (Accelerate's optimizer_{i}/): 23 against exp_avg
    its = [i if i[0] != "optimizer.state.b.weight.exp_avg_sq" else
           (i[0], "tensor", torch.zeros(3, 2), [((0, 0), (3, 2), 0)]) for i in items[2:]]
    case("optimizer-alone", 23, E_STATE, "DCP: b.weight: exp_avg_sq is #[3, 2], exp_avg is #[2, 3]", its_items=its)

    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
