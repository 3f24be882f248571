"""DCP folders written by ckptscope from an optimizer.pt and its model (DCP's conversion the other
way round, docs/distributed.md), checked against PyTorch.

  dcp_write_check.py seed DIR    trains a small model a few AdamW steps and saves DIR/optimizer.pt,
                                 DIR/model.pt and DIR/expect.json (the FQN of each optimizer id);
                                 DIR/other.pt, a model the optimizer does not fit; DIR/nested.pt and
                                 DIR/deep.pt, the optimizer under a top-level key and deeper; and DIR/large/,
                                 one 16 MB parameter's optimizer.pt and model.pt
  dcp_write_check.py check DIR   DIR/dcp113/: torch 1.13's own loader
                                 (torch.distributed._shard.checkpoint.load_state_dict with
                                 FileSystemReader, no_dist=True) into a freshly built flat state dict
                                 of the right shapes; every value compared bit for bit with the
                                 sources. DIR/dcp2/: torch >= 2.4's form, which torch 1.13 cannot
                                 load: its .metadata read by a restricted unpickler (no class of
                                 torch.distributed is imported) and checked to hold exactly the
                                 classes, fields and byte ranges torch's writer produces
                                 (torch/distributed/checkpoint/{metadata,filesystem,
                                 default_planner}.py), each record loaded with torch.load.

Run with Debian's /usr/bin/python3 (python3-torch 1.13, CPU).
"""
import io
import json
import os
import pickle
import sys

import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(11, 6)
        self.l1 = nn.Linear(6, 7)
        self.norm = nn.LayerNorm(7)
        self.bn = nn.BatchNorm1d(7)
        self.frozen = nn.Linear(7, 3)
        self.head = nn.Linear(6, 11, bias=False)
        self.head.weight = self.emb.weight  # tied: the optimizer lists it once
        for p in self.frozen.parameters():
            p.requires_grad_(False)

    def forward(self, x):
        h = self.emb(x).mean(1)
        y = self.bn(self.norm(self.l1(h)))
        return self.head(h).sum() + self.frozen(y).sum()


def seed(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = Net()
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    for _ in range(3):
        opt.zero_grad()
        model(torch.randint(0, 11, (4, 5))).backward()
        opt.step()
    torch.save(opt.state_dict(), os.path.join(out, "optimizer.pt"))
    torch.save(model.state_dict(), os.path.join(out, "model.pt"))
    # the optimizer under a top-level key beside other values (written), and deeper (refused)
    torch.save({"optimizer": opt.state_dict(), "epoch": 3}, os.path.join(out, "nested.pt"))
    torch.save({"a": {"optimizer": opt.state_dict()}}, os.path.join(out, "deep.pt"))
    other = model.state_dict()  # a model whose l1 is wider: the pairing refuses it
    other["l1.weight"] = torch.zeros(8, 6)
    torch.save(other, os.path.join(out, "other.pt"))
    # large/: one 16 MB parameter, for the writer's memory bound (test_dcp_write_memory)
    os.makedirs(os.path.join(out, "large"), exist_ok=True)
    big = nn.Linear(2048, 2048, bias=False)
    big_opt = torch.optim.Adam(big.parameters())
    big(torch.randn(2, 2048)).sum().backward()
    big_opt.step()
    torch.save(big_opt.state_dict(), os.path.join(out, "large", "optimizer.pt"))
    torch.save(big.state_dict(), os.path.join(out, "large", "model.pt"))
    names = [n for n, p in model.named_parameters() if p.requires_grad]  # a tie once, as ids number it
    with open(os.path.join(out, "expect.json"), "w") as f:
        json.dump({"fqns": names}, f)


def bits(t):
    t = t.contiguous()
    view = {torch.float32: torch.int32, torch.float64: torch.int64, torch.float16: torch.int16,
            torch.bfloat16: torch.int16}.get(t.dtype)
    return t.view(view) if view is not None else t


def same(a, b, what):
    assert isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor), what
    assert a.dtype == b.dtype and a.shape == b.shape, (what, a.dtype, b.dtype, a.shape, b.shape)
    assert torch.equal(bits(a), bits(b)), what


def expected(src):
    """The flat keys, in the order ckptscope writes them, and their values."""
    osd = torch.load(os.path.join(src, "optimizer.pt"))
    msd = torch.load(os.path.join(src, "model.pt"))
    fqns = json.load(open(os.path.join(src, "expect.json")))["fqns"]
    keys = {}
    for k, v in msd.items():
        keys["model." + k] = (v, ("model", k))
    for i, st in osd["state"].items():
        for k, v in st.items():
            keys[f"optim.state.{fqns[i]}.{k}"] = (v, ("optim", "state", fqns[i], k))
    for g, group in enumerate(osd["param_groups"]):
        for k, v in group.items():
            if k == "params":
                v = [fqns[i] for i in v]
            keys[f"optim.param_groups.{g}.{k}"] = (v, ("optim", "param_groups", g, k))
    return keys


def import_shard_checkpoint():
    """torch 1.13's _shard modules under Python 3.11: a dataclass field there has a default of an
    unhashable dataclass (ShardedTensorMetadata.tensor_properties), which Python 3.11 refuses as a
    mutable default; it is let through for that import only, nothing else changes."""
    import dataclasses

    orig = dataclasses._get_field

    def lenient(cls, name, *rest):
        try:
            return orig(cls, name, *rest)
        except ValueError as e:
            if "mutable default" not in str(e):
                raise
            default = cls.__dict__.get(name)
            default = default.default if isinstance(default, dataclasses.Field) else default
            kind = type(default)
            kind.__hash__ = object.__hash__
            try:
                return orig(cls, name, *rest)
            finally:
                kind.__hash__ = None

    dataclasses._get_field = lenient
    try:
        from torch.distributed._shard.checkpoint import FileSystemReader, load_state_dict
    finally:
        dataclasses._get_field = orig
    return FileSystemReader, load_state_dict


def check_113(src, folder):
    FileSystemReader, load_state_dict = import_shard_checkpoint()

    keys = expected(src)
    dest = {}
    for k, (v, _) in keys.items():
        dest[k] = torch.zeros_like(v) if isinstance(v, torch.Tensor) else None
    meta = FileSystemReader(folder).read_metadata()
    assert list(meta.state_dict_metadata) == list(keys), "keys and their order"
    assert meta.planner_data is None
    load_state_dict(dest, FileSystemReader(folder), no_dist=True)
    for k, (v, _) in keys.items():
        if isinstance(v, torch.Tensor):
            same(dest[k], v, k)
        else:
            assert type(dest[k]) is type(v) and dest[k] == v, (k, dest[k], v)
    print(f"dcp113: {len(keys)} keys loaded by torch {torch.__version__}'s load_state_dict, bit for bit")


# ---- torch >= 2.4's form, read as data ----

class Obj:
    def __init__(self, cls, args=()):
        self.cls, self.args, self.state, self.built = cls, args, None, False

    def __setstate__(self, state):
        self.state, self.built = state, True

    def __hash__(self):
        return id(self)


ALLOWED = {
    "torch.distributed.checkpoint.metadata": {"Metadata", "TensorStorageMetadata", "ChunkStorageMetadata",
                                              "BytesStorageMetadata", "MetadataIndex", "StorageMeta",
                                              "TensorProperties", "_MEM_FORMAT_ENCODING"},
    "torch.distributed.checkpoint.filesystem": {"_StorageInfo"},
    "torch": {"Size", "float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8",
              "bool"},
    "torch.serialization": {"_get_layout"},
    "builtins": {"getattr"},
    "pathlib": {"PosixPath"},
}


class Restricted(pickle.Unpickler):
    def find_class(self, module, name):
        assert name in ALLOWED.get(module, ()), f"{module}.{name} is not a class torch's writer names"
        path = f"{module}.{name}"

        class Cls:
            def __new__(cls, *args):
                return Obj(path, args)

        Cls.path = path
        return Cls


def cls_of(o):
    return o.cls if isinstance(o, Obj) else getattr(o, "path", None)


def size_of(o):
    assert isinstance(o, Obj) and o.cls == "torch.Size" and len(o.args) == 1, o
    return tuple(o.args[0])


def check_2(src, folder):
    keys = expected(src)
    with open(os.path.join(folder, ".metadata"), "rb") as f:
        raw = f.read()
    assert raw[:2] == b"\x80\x04", "pickle.dump's default protocol"
    m = Restricted(io.BytesIO(raw)).load()
    M = "torch.distributed.checkpoint.metadata."
    assert m.cls == M + "Metadata" and m.args == ()
    assert list(m.state) == ["state_dict_metadata", "planner_data", "storage_data", "storage_meta", "version"]
    assert m.state["version"] == "1.0.0"
    sdm, planner, storage = m.state["state_dict_metadata"], m.state["planner_data"], m.state["storage_data"]
    assert list(sdm) == list(keys) and list(planner) == list(keys), "keys and their order"
    for k, (v, path) in keys.items():
        assert planner[k] == path, (k, planner[k], path)
        md = sdm[k]
        if not isinstance(v, torch.Tensor):
            assert md.cls == M + "BytesStorageMetadata" and not md.built, k
            continue
        assert md.cls == M + "TensorStorageMetadata" and list(md.state) == ["properties", "size", "chunks"], k
        props = md.state["properties"]
        assert props.cls == M + "TensorProperties" and isinstance(props.state, tuple) and len(props.state) == 5
        dtype, layout, requires_grad, mem, pin = props.state
        assert cls_of(dtype) == "torch." + str(v.dtype).split(".")[1], (k, cls_of(dtype))
        assert layout.cls == "torch.serialization._get_layout" and layout.args == ("torch.strided",)
        assert requires_grad is False and pin is False
        assert mem.cls == "builtins.getattr" and cls_of(mem.args[0]) == M + "_MEM_FORMAT_ENCODING"
        assert mem.args[1] == "TORCH_CONTIGUOUS_FORMAT"
        assert size_of(md.state["size"]) == tuple(v.shape)
        chunks = md.state["chunks"]
        assert len(chunks) == 1 and chunks[0].cls == M + "ChunkStorageMetadata"
        assert list(chunks[0].state) == ["offsets", "sizes"]
        assert size_of(chunks[0].state["offsets"]) == (0,) * v.dim()
        assert size_of(chunks[0].state["sizes"]) == tuple(v.shape)
    data = open(os.path.join(folder, "__0_0.distcp"), "rb").read()
    at, seen_tensor = 0, False
    assert len(storage) == len(keys)
    for idx, info in storage.items():
        assert idx.cls == M + "MetadataIndex" and info.cls == "torch.distributed.checkpoint.filesystem._StorageInfo"
        k = idx.state["fqn"]
        v = keys[k][0]
        tensor = isinstance(v, torch.Tensor)
        assert list(idx.state) == (["fqn", "index", "offset"] if tensor else ["fqn", "index"]), idx.state
        assert idx.state["index"] is None
        if tensor:
            assert size_of(idx.state["offset"]) == (0,) * v.dim()
        assert list(info.state) == ["relative_path", "offset", "length"]
        assert info.state["relative_path"] == "__0_0.distcp"
        # back to back from byte 0, the bytes items before the tensors (_write_files_from_queue)
        assert info.state["offset"] == at, (k, info.state["offset"], at)
        assert not (seen_tensor and not tensor), "a bytes item after a tensor"
        seen_tensor = seen_tensor or tensor
        window = data[at:at + info.state["length"]]
        at += info.state["length"]
        got = torch.load(io.BytesIO(window))
        if tensor:
            same(got, v, k)
            assert got.storage().size() == got.numel(), "a storage of exactly its elements"
        else:
            assert type(got) is type(v) and got == v, (k, got, v)
    assert at == len(data), "records cover the file"
    meta = m.state["storage_meta"]
    assert meta.cls == M + "StorageMeta"
    assert list(meta.state) == ["checkpoint_id", "save_id", "load_id", "modules"]
    cid = meta.state["checkpoint_id"]
    assert cid.cls == "pathlib.PosixPath" and os.path.join(*cid.args) == os.path.abspath(folder), cid.args
    assert isinstance(meta.state["save_id"], str) and meta.state["load_id"] is None and meta.state["modules"] == []
    print(f"dcp2: {len(keys)} keys, classes, fields and {len(storage)} byte ranges as torch >= 2.4 writes them")


def main():
    mode, out = sys.argv[1], sys.argv[2]
    if mode == "seed":
        seed(out)
    else:
        check_113(out, os.path.join(out, "dcp113"))
        check_2(out, os.path.join(out, "dcp2"))


if __name__ == "__main__":
    main()
