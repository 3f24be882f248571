"""PyTorch Distributed Checkpoint (DCP) folders of torch >= 2.0, written without torch.distributed.

torch >= 2.0 cannot be installed here, so this file writes its folders as torch's FileSystemWriter
does (torch/distributed/checkpoint/{filesystem, default_planner, planner_helpers, _dedup_save_plans,
_traverse, state_dict}.py), with Debian's torch 1.13 only for torch.save of each record:

* `.metadata` is pickle.dump (protocol 4) of stand-in classes registered under torch's module and
  class names (FORMAT.md 12.1's table), so the pickle names exactly what torch's does: NEWOBJ,
  BUILD with the dataclass's __dict__ or __getstate__, the memory-format enum as CPython 3.11
  reduces it (builtins.getattr), torch.Size, torch.{dtype}, torch.serialization._get_layout.
* data files `__{r}_{n}.distcp` hold torch.save records back to back, each exactly what
  `_write_item` writes: torch.save into the stream at its offset (a file's bytes items first, then
  its tensors); chunks come from the planner's steps: every rank's local plan, dedup_save_plans,
  create_default_global_save_plan (index hints), planner_data as dict(ChainMap(*mappings)).

CASES lists every folder: valid ones (forms N, N23, F, I, Accelerate, ...) and broken ones, one
or more per check of FORMAT.md 12.5, each with the exact diagnostic text. `python3 dcp_seeds.py OUT`
writes them all under OUT, with OUT/cases.json, and checks them: the independent reader
(dcp_truth.py) finds in every valid folder the tensors saved, bit for bit; it reads the real torch
1.13 folder (tests/fixtures/dcp-torch113) whole; this writer's redo of that save gives its
.metadata byte for byte; and tests/cases/dcp.json states what the folders give.
`python3 dcp_seeds.py --table` rewrites that table (keeping the codes filled in it).
Import it to write one folder: `write_case(name, out_dir)`."""
import enum
import hashlib
import io
import json
import os
import pickle
import shutil
import struct
import sys
import types
import zipfile
from collections import ChainMap
from pathlib import PosixPath

import torch

sys.dont_write_bytecode = True  # dcp_truth is imported from the source tree: leave no __pycache__ there

# ---- stand-in classes under torch's names ------------------------------------------------------

def _module(name):
    """A module object in sys.modules for pickle's lookup of a stand-in class (never torch's own)."""
    m = sys.modules.get(name)
    if m is None or not getattr(m, '_dcp_standin', False):
        m = types.ModuleType(name)
        m._dcp_standin = True
        sys.modules[name] = m
    return m


def _class(module, name, getstate=None):
    have = getattr(_module(module), name, None)
    if have is not None:  # one class per (module, name), shared by the sets of paths
        return have
    ns = {'__module__': module, '__qualname__': name}
    if getstate is not None:
        ns['__getstate__'] = getstate
    cls = type(name, (), ns)
    setattr(_module(module), name, cls)
    return cls


def _enum(module, name):
    have = getattr(_module(module), name, None)
    if have is not None:
        return have
    cls = enum.Enum(name, [('TORCH_CONTIGUOUS_FORMAT', 0), ('TORCH_CHANNELS_LAST', 1),
                           ('TORCH_PRESERVE_FORMAT', 2)], module=module, qualname=name)
    setattr(_module(module), name, cls)
    return cls


def _storage_info_state(self):
    # filesystem.py _StorageInfo.__getstate__: None fields are left out
    return {k: v for k, v in self.__dict__.items() if v is not None}


def _tensor_properties_state(self):
    # TensorProperties.__getstate__: a 5-tuple, the memory format as its enum member
    return (self.dtype, self.layout, self.requires_grad, self.mem, self.pin_memory)


CK = 'torch.distributed.checkpoint'
SH = 'torch.distributed._shard'


class Classes:
    """One set of class paths: 'new' (torch >= 2.3), 'old' (2.0-2.2: TensorProperties under _shard),
    '1.13' (everything under _shard)."""

    def __init__(self, paths):
        md = CK + '.metadata' if paths != '1.13' else SH + '.checkpoint.metadata'
        fs = CK + '.filesystem' if paths != '1.13' else SH + '.checkpoint.filesystem'
        self.Metadata = _class(md, 'Metadata')
        self.TensorStorageMetadata = _class(md, 'TensorStorageMetadata')
        self.ChunkStorageMetadata = _class(md, 'ChunkStorageMetadata')
        self.BytesStorageMetadata = _class(md, 'BytesStorageMetadata')
        self.MetadataIndex = _class(md, 'MetadataIndex')
        self.StorageMeta = _class(CK + '.metadata', 'StorageMeta')
        self._StorageInfo = _class(fs, '_StorageInfo', _storage_info_state)
        if paths == 'new':
            self.TensorProperties = _class(CK + '.metadata', 'TensorProperties', _tensor_properties_state)
            self.mem = _enum(CK + '.metadata', '_MEM_FORMAT_ENCODING')
        else:
            tp = SH + '.sharded_tensor.metadata'
            self.TensorProperties = _class(tp, 'TensorProperties', _tensor_properties_state)
            self.mem = _enum(tp, 'MEM_FORMAT_ENCODING')


_CLASSES = {}


def classes(paths):
    if paths not in _CLASSES:
        _CLASSES[paths] = Classes(paths)
    return _CLASSES[paths]


def obj(cls, **fields):
    """An instance whose __dict__ holds fields in this order (a dataclass's field order)."""
    o = cls.__new__(cls)
    o.__dict__.update(fields)
    return o


def metadata_index(C, fqn, offsets=None, index=None):
    # MetadataIndex.__init__ sets fqn, index, then offset only when given
    o = obj(C.MetadataIndex, fqn=fqn, index=index)
    if offsets is not None:
        o.offset = torch.Size(offsets)
    return o


def tensor_properties(C, dtype):
    o = obj(C.TensorProperties, dtype=dtype, layout=torch.strided, requires_grad=False,
            mem=C.mem.TORCH_CONTIGUOUS_FORMAT, pin_memory=False)
    return o


# ---- the state dicts --------------------------------------------------------------------------

def tiny_model(V=11, E=6, H=7, dtype=torch.float32, seed=0):
    """The fixtures' Tiny model's parameters in module order: emb, l1, ln, l2, frozen, head (tied
    to emb). Returns (state dict, trainable FQNs in named_parameters() order, aliases)."""
    g = torch.Generator().manual_seed(seed)

    def t(*shape):
        return torch.randn(*shape, generator=g).to(dtype)

    emb = t(V, E)
    sd = {
        'emb.weight': emb, 'l1.weight': t(H, E), 'l1.bias': t(H), 'ln.weight': t(H), 'ln.bias': t(H),
        'l2.weight': t(E, H), 'l2.bias': t(E), 'frozen.weight': t(E, E), 'frozen.bias': t(E),
        'head.weight': emb,
    }
    trainable = ['emb.weight', 'l1.weight', 'l1.bias', 'ln.weight', 'ln.bias', 'l2.weight', 'l2.bias']
    return sd, trainable


ADAMW_GROUP = [('lr', 0.001), ('betas', (0.9, 0.999)), ('eps', 1e-08), ('weight_decay', 0.01),
               ('amsgrad', False), ('foreach', None), ('maximize', False), ('capturable', False),
               ('differentiable', False), ('fused', None)]


def adamw_state(model, trainable, dtype=None, step=3.0, seed=1):
    """get_optimizer_state_dict's {'state': {fqn: {step, exp_avg, exp_avg_sq}}, 'param_groups'}."""
    g = torch.Generator().manual_seed(seed)
    state = {}
    for fqn in trainable:
        p = model[fqn]
        dt = dtype or p.dtype
        state[fqn] = {
            'step': torch.tensor(step),
            'exp_avg': (0.1 * torch.randn(p.shape, generator=g)).to(dt),
            'exp_avg_sq': (0.01 * torch.rand(p.shape, generator=g)).to(dt),
        }
    group = dict(ADAMW_GROUP)
    group['params'] = list(trainable)
    return {'state': state, 'param_groups': [group]}


def form_i(osd):
    """A plain optimizer.state_dict(): ids instead of FQNs."""
    ids = {}
    for grp in osd['param_groups']:
        for fqn in grp['params']:
            ids[fqn] = len(ids)
    groups = []
    for grp in osd['param_groups']:
        g = {k: v for k, v in grp.items() if k != 'params'}
        g['params'] = [ids[f] for f in grp['params']]
        groups.append(g)
    return {'state': {ids[f]: v for f, v in osd['state'].items()}, 'param_groups': groups}


def form_f(osd):
    """state_dict.py _flatten_optim_state_dict: state.{fqn}.{key}, param_groups.{fqn}.{key}."""
    ret = {}
    for fqn, st in osd['state'].items():
        for k, v in st.items():
            ret[f'state.{fqn}.{k}'] = v
    for grp in osd['param_groups']:
        for fqn in grp['params']:
            for k, v in grp.items():
                if k != 'params':
                    ret[f'param_groups.{fqn}.{k}'] = v
    return ret


# ---- _traverse: flat keys and their paths -----------------------------------------------------

def _holds_tensor(v):
    if isinstance(v, torch.Tensor):
        return True
    if isinstance(v, dict):
        return any(_holds_tensor(x) for x in v.values())
    if isinstance(v, list):
        return any(_holds_tensor(x) for x in v)
    return False


def flatten(sd, walk):
    """(flat dict, mappings) as flatten_state_dict gives them. walk '2.4': every dict is walked, a
    list when it holds a tensor or a dict at any depth; walk '2.0': a dict or list holding no tensor
    is one leaf."""
    flat, mappings = {}, {}

    def terminal(v):
        if isinstance(v, dict):
            if walk == '2.4':
                return False
            values = list(v.values())
        elif isinstance(v, list):
            values = v
        else:
            return True
        for e in values:
            if isinstance(e, (dict, list)) and not terminal(e):
                return False
            if isinstance(e, torch.Tensor):
                return False
        return True

    def visit(path, v):
        if walk == '2.4' and isinstance(v, dict):
            for k, x in v.items():
                visit(path + (str(k),), x)
        elif terminal(v):
            key = '.'.join(map(str, path))
            flat[key] = v
            mappings[key] = path
        elif isinstance(v, dict):
            for k, x in v.items():
                visit(path + (str(k),), x)
        else:
            for i, x in enumerate(v):
                visit(path + (i,), x)

    for k, v in sd.items():
        visit((str(k),), v)
    return flat, mappings


# ---- sharding: which boxes each rank holds ----------------------------------------------------

def chunk_sizes(n, w):
    """torch.chunk's sizes of n over w (DTensor Shard): ceil(n / w) each, the last fewer or none."""
    c = -(-n // w) if n else 0
    out, at = [], 0
    while at < n:
        out.append((at, min(c, n - at)))
        at += c
    return out


def boxes(spec, shape, rank, world):
    """The chunks (offsets, sizes) rank holds of a tensor of this shape, or None: a plain tensor
    every rank offers (DCP deduplicates it)."""
    shape = list(shape)
    if spec == 'rep' or not shape:
        return None
    if spec in ('row', 'col'):
        d = 0 if spec == 'row' or len(shape) < 2 else 1
        parts = chunk_sizes(shape[d], world)
        if rank >= len(parts):
            return []
        off, size = parts[rank]
        offs = [0] * len(shape)
        sizes = list(shape)
        offs[d], sizes[d] = off, size
        return [(offs, sizes)]
    if spec[0] == 'block':  # 2-D mesh (a, b): rows over a, columns over b
        a, b = spec[1], spec[2]
        if len(shape) < 2:
            return boxes('row', shape, rank // b, a) if rank % b == 0 else []
        rows, cols = chunk_sizes(shape[0], a), chunk_sizes(shape[1], b)
        i, j = rank // b, rank % b
        if i >= len(rows) or j >= len(cols):
            return []
        return [([rows[i][0], cols[j][0]] + [0] * (len(shape) - 2),
                 [rows[i][1], cols[j][1]] + shape[2:])]
    if spec[0] == 'explicit':  # {rank: [(offsets, sizes)]}: any boxes, also broken ones
        return spec[1].get(rank, [])
    raise ValueError(spec)


def box_of(t, offs, sizes):
    """The chunk's values: a fresh tensor of exactly its elements (_SerialCpuLoader clones views);
    parts outside t (broken chunks) are zeros."""
    out = torch.zeros(sizes, dtype=t.dtype)
    src, dst = [], []
    for o, s, n in zip(offs, sizes, t.shape):
        lo, hi = max(o, 0), min(o + s, n)
        if hi <= lo:
            return out
        src.append(slice(lo, hi))
        dst.append(slice(lo - o, hi - o))
    out[tuple(dst)] = t[tuple(src)]
    return out.clone()


# ---- records and the writer -------------------------------------------------------------------

class Raw(bytes):
    """A record's bytes as given (not torch.save of a value): a broken record."""


class _RecordsAfterPickle:
    """torch.serialization._save's zip writer, with the records newer torch writes right after
    data.pkl."""

    def __init__(self, real, after):
        self.real, self.after = real, after

    def write_record(self, name, data, size):
        self.real.write_record(name, data, size)
        if name == 'data.pkl':
            for n, v in self.after:
                self.real.write_record(n, v, len(v))


def torch_save_bytes(value, form='1.13'):
    """torch.save(value) into a stream, as torch of this form writes it, through torch's own zip
    writer: '1.13' (this torch: data.pkl, data/{key}, version); '2.x' (byteorder after data.pkl,
    then .data/serialization_id after version: serialization.py _save since the byteorder record,
    PyTorchStreamWriter::writeEndOfFile); 'main' (.format_version and .storage_alignment before
    byteorder, current serialization.py). The serialization id here is 40 digits derived from the
    record, not torch's own value (nothing reads it as a number)."""
    b = io.BytesIO()
    if form == '1.13':
        torch.save(value, b)
        return b.getvalue()
    after = [('byteorder', 'little')]
    if form == 'main':
        after = [('.format_version', '1'), ('.storage_alignment', '64')] + after
    real = torch._C.PyTorchFileWriter(b)
    torch.serialization._save(value, _RecordsAfterPickle(real, after), pickle, 2)
    real.write_record('version', '3\n', 2)
    digest = hashlib.sha1(b.getvalue()).digest()
    sid = str(int.from_bytes(digest, 'big'))[:40].rjust(40, '0')
    real.write_record('.data/serialization_id', sid, len(sid))
    real.write_end_of_file()
    return b.getvalue()


def zstd_raw_frame(data):
    """A zstd frame of raw (stored) blocks: what stream.zstd/1 writes, without compressing."""
    out = bytearray(struct.pack('<IB', 0xFD2FB528, 0xA0)) + struct.pack('<I', len(data))
    blocks = [data[i:i + 131072] for i in range(0, len(data), 131072)] or [b'']
    for i, blk in enumerate(blocks):
        last = 1 if i == len(blocks) - 1 else 0
        out += struct.pack('<I', last | (len(blk) << 3))[:3] + blk
    return bytes(out)


SOURCES = {}  # folder -> the flat dict it saves, for the self-check against dcp_truth


class Item:
    def __init__(self, fqn, kind, value=None, offs=None, sizes=None, tensor=None):
        self.fqn, self.kind, self.value = fqn, kind, value
        self.offs, self.sizes, self.tensor = offs, sizes, tensor
        self.hint = None

    @property
    def key(self):
        return (self.fqn, tuple(self.offs) if self.offs is not None else None)

    def storage_size(self):
        if self.kind == 'bytes':
            return 0
        n = 1
        for s in self.sizes:
            n *= s
        return n * self.tensor.element_size()


def save(sd, out, *, world=2, spec=None, era='2.4', flatten_sd=True, single_file_per_rank=True,
         thread_count=1, dedup_lowest=False, records=None, transforms=None, fields=None,
         checkpoint_id=None, record=None, torch_form=None):
    """Writes sd as `dcp.save(sd, checkpoint_id=out)` run on `world` ranks would.

    spec(flat key, tensor) -> 'rep' | 'row' | 'col' | ('block', a, b) | ('explicit', {...});
    era: '2.4' (torch >= 2.4: every dict walked, every rank offers bytes items, class paths 'new',
    storage_meta and version '1.0.0'), '2.3' (2.3: lists of non-tensors are leaves, bytes items on
    the coordinator only, class paths 'new', no storage_meta nor version), '2.0' (as 2.3 with
    TensorProperties under _shard, duplicates kept on the lowest rank), '1.13';
    records {(fqn, offsets tuple): value} replaces what a
    record holds (broken folders); transforms {(fqn, offsets): [descriptor]}; fields overrides the
    Metadata's fields; torch_form the records' torch.save form (torch_save_bytes; by era: '2.x'
    from 2.3, else '1.13'); record(item, stream), when given, writes each record instead (the scale
    bench's sparse records). Returns the classes, the Metadata's fields and the storage entries, for
    the broken cases' edits."""
    C = classes({'2.4': 'new', '2.3': 'new', '2.0': 'old', '1.13': '1.13'}[era])
    spec = spec or (lambda k, t: 'row')
    records = records or {}
    transforms = transforms or {}
    torch_form = torch_form or ('2.x' if era in ('2.4', '2.3') else '1.13')
    os.makedirs(out, exist_ok=True)
    if flatten_sd:
        flat, mappings = flatten(sd, '2.4' if era == '2.4' else '2.0')
    else:
        flat, mappings = dict(sd), None
    SOURCES[os.path.abspath(out)] = flat

    # every rank's local plan (default_planner create_default_local_save_plan)
    plans = []
    for r in range(world):
        items = []
        for fqn, v in flat.items():
            if isinstance(v, torch.Tensor):
                bx = boxes(spec(fqn, v), v.shape, r, world)
                if bx is None:
                    items.append(Item(fqn, 'tensor', offs=[0] * v.dim(), sizes=list(v.shape), tensor=v))
                else:
                    for offs, sizes in bx:
                        items.append(Item(fqn, 'tensor', offs=list(offs), sizes=list(sizes), tensor=v))
            elif era == '2.4' or r == 0:
                items.append(Item(fqn, 'bytes', value=v))
        plans.append(items)

    # _dedup_save_plans: each item once, in the plan with the fewest planned bytes so far; torch
    # 2.0's _dedup_tensors kept the first plan's copy
    dedup_lowest = dedup_lowest or era in ('2.0', '1.13')
    where, first = {}, {}
    for p, items in enumerate(plans):
        for it in items:
            where.setdefault(it.key, set()).add(p)
            first[it.key] = it
    size = [0] * world
    keep = {}
    for key, ps in where.items():
        pick = min(ps) if dedup_lowest else min(sorted(ps), key=lambda i: size[i])
        size[pick] += first[key].storage_size() or 1
        keep[key] = pick
    plans = [[it for it in items if keep[it.key] == p] for p, items in enumerate(plans)]

    # create_default_global_save_plan: state_dict_metadata in plan order, index hints
    sdm = {}
    for items in plans:
        for it in items:
            if it.kind == 'bytes':
                sdm[it.fqn] = obj(C.BytesStorageMetadata)
            else:
                tmd = sdm.setdefault(it.fqn, obj(C.TensorStorageMetadata,
                                                 properties=tensor_properties(C, it.tensor.dtype),
                                                 size=torch.Size(it.tensor.shape), chunks=[]))
                it.hint = len(tmd.chunks)
                tmd.chunks.append(obj(C.ChunkStorageMetadata, offsets=torch.Size(it.offs),
                                      sizes=torch.Size(it.sizes)))

    # FileSystemWriter.write_data: files per rank, bytes items first, then tensors
    storage = []  # [(MetadataIndex, _StorageInfo)] in finish's order
    for r, items in enumerate(plans):
        if single_file_per_rank:
            buckets = split_by_size_and_type(thread_count, items)
        else:
            buckets = [[it] for it in items]
        for n, bucket in enumerate(buckets):
            name = f'__{r}_{n}.distcp'
            with open(os.path.join(out, name), 'wb') as f:
                ordered = [it for it in bucket if it.kind == 'bytes'] + \
                          [it for it in bucket if it.kind != 'bytes']
                for it in ordered:
                    if record is not None:
                        offset = f.tell()
                        record(it, f)
                        info = obj(C._StorageInfo, relative_path=name, offset=offset, length=f.tell() - offset,
                                   transform_descriptors=None)
                        storage.append((metadata_index(C, gathered(it.fqn), it.offs, it.hint)
                                        if it.kind != 'bytes' else metadata_index(C, gathered(it.fqn)), info))
                        continue
                    if it.key in records and isinstance(records[it.key], Raw):
                        data = bytes(records[it.key])
                    elif it.key in records:
                        data = torch_save_bytes(records[it.key], torch_form)
                    elif it.kind == 'bytes':
                        data = torch_save_bytes(it.value, torch_form)
                    else:
                        data = torch_save_bytes(box_of(it.tensor, it.offs, it.sizes), torch_form)
                    desc = transforms.get(it.key)
                    if desc:
                        data = zstd_raw_frame(data)
                    offset = f.tell()
                    f.write(data)
                    info = obj(C._StorageInfo, relative_path=name, offset=offset, length=len(data),
                               transform_descriptors=list(desc) if desc else None)
                    if it.kind == 'bytes':
                        idx = metadata_index(C, gathered(it.fqn))
                    else:
                        idx = metadata_index(C, gathered(it.fqn), it.offs, it.hint)
                    storage.append((idx, info))

    planner_data = None
    if mappings is not None and era != '1.13':
        # every rank flattens the whole dict: dict(ChainMap(*mappings)) keeps the last rank's order
        planner_data = dict(ChainMap(*[mappings for _ in range(world)]))
    md_fields = {'state_dict_metadata': sdm, 'planner_data': planner_data, 'storage_data': None}
    if era == '2.4':
        md_fields['storage_meta'] = obj(C.StorageMeta,
                                        checkpoint_id=PosixPath(checkpoint_id or '/ckpt/' + os.path.basename(out)),
                                        save_id='5b0f3c9e-1d2a-4c7e-9f00-0123456789ab', load_id=None,
                                        modules=[])
        md_fields['version'] = '1.0.0'
    md_fields.update(fields or {})
    return C, md_fields, storage


def gathered(s):
    """A copy of the string: a write result's key comes back to the coordinator through a pickled
    gather, so it is another object than state_dict_metadata's key and pickle.dump writes it again
    (no memo reference), as in the files torch writes."""
    return (s + '.')[:-1]


def split_by_size_and_type(bins, items):
    """filesystem.py _split_by_size_and_type: bytes items round-robin, tensors (largest first) to
    the least-filled file."""
    if bins == 1:
        return [items]
    bytes_w = [it for it in items if it.kind == 'bytes']
    tensor_w = sorted([it for it in items if it.kind != 'bytes'], key=lambda it: it.storage_size(),
                      reverse=True)
    buckets, sizes = [[] for _ in range(bins)], [0] * bins
    for i, it in enumerate(bytes_w):
        buckets[i % bins].append(it)
    for it in tensor_w:
        k = min(range(bins), key=lambda b: sizes[b])
        buckets[k].append(it)
        sizes[k] += it.storage_size()
    return buckets


def write_metadata(out, C, md_fields, storage, name='.metadata', drop=()):
    md = obj(C.Metadata, **md_fields)
    # MetadataIndex stand-ins hash by identity, so a broken file may list one (fqn, offset) twice
    md.storage_data = dict(storage)
    for k in drop:
        del md.__dict__[k]
    with open(os.path.join(out, name), 'wb') as f:
        pickle.dump(md, f, protocol=4)


# ---- the folders ------------------------------------------------------------------------------

def shape_text(s):
    return '#[' + ', '.join(str(int(x)) for x in s) + ']'


def nested(model, osd, m='model', p='optim'):
    return {m: model, p: osd}


def base_sd(dtype=torch.float32, state_dtype=None, **dims):
    model, trainable = tiny_model(dtype=dtype, **dims)
    return model, trainable, adamw_state(model, trainable, dtype=state_dtype)


def write(out, sd, **kw):
    """save() then .metadata: a valid folder. Returns (C, fields, storage) as written."""
    C, fields, storage = save(sd, out, **kw)
    write_metadata(out, C, fields, storage)
    return C, fields, storage


def entry(storage, fqn, offs=None):
    for idx, info in storage:
        if idx.fqn == fqn and (offs is None or list(idx.__dict__.get('offset', [])) == list(offs)):
            return idx, info
    raise KeyError((fqn, offs))


def n_folder(out, **kw):
    model, trainable, osd = base_sd()
    return write(out, nested(model, osd), **kw)


CASES = []


def case(name, what, check=None, severity=None):
    def add(fn):
        CASES.append({'name': name, 'what': what, 'check': check, 'severity': severity, 'build': fn})
        return fn
    return add


# valid folders

@case('n', 'form N (torch >= 2.4): model.{fqn} and optim.state.{fqn}.{key}, optim.param_groups.0.{key}; '
      '2 ranks, row chunks (torch.chunk sizes 6+5, 4+3, 3+3), planner_data, storage_meta, version 1.0.0, '
      'class paths of torch >= 2.3; steps and bytes items deduplicated onto rank 1; head.weight tied to '
      'emb.weight (both in the model, emb.weight in the optimizer); frozen.* without state')
def _(out):
    n_folder(out)


@case('n23-old', 'form N23 (torch 2.0-2.2): optim.param_groups one bytes item (the whole list), bytes '
      'items on the coordinator only, unsharded tensors kept on rank 0 (_dedup_tensors), TensorProperties '
      'and MEM_FORMAT_ENCODING under torch.distributed._shard.sharded_tensor.metadata, Metadata of three '
      'fields (no storage_meta, no version)')
def _(out):
    model, trainable, osd = base_sd()
    write(out, nested(model, osd), era='2.0')


@case('n23', 'form N23 with the class paths of torch >= 2.3 (TensorProperties, _MEM_FORMAT_ENCODING in '
      'torch.distributed.checkpoint.metadata), Metadata of three fields')
def _(out):
    model, trainable, osd = base_sd()
    write(out, nested(model, osd), era='2.3')


LR_SCHEDULER = {'base_lrs': [0.001], 'last_epoch': 3, 'verbose': False, '_step_count': 4,
                '_get_lr_called_within_step': False, '_last_lr': [0.001], 'lr_lambdas': [{}]}


def torchtitan_sd(train_state, decoupled=None):
    """torchtitan's step-N/: states minus the model, then the model's keys (_flattened_model_states_sd);
    decoupled: the group's decoupled_weight_decay, as torch's Adam saves it where it has the option."""
    model, trainable, osd = base_sd()
    if decoupled is not None:
        osd['param_groups'][0]['decoupled_weight_decay'] = decoupled
    sd = {'optimizer': form_f(osd), 'lr_scheduler': dict(LR_SCHEDULER), 'train_state': train_state}
    sd.update(model)
    return sd


@case('f', "form F (torchtitan step-N/): bare model FQNs at the top level, optimizer.state.{fqn}.{key} and "
      "optimizer.param_groups.{fqn}.{key} (flatten_optimizer_state_dict), an lr_scheduler dict of bytes items, "
      "train_state.step a 0-d int32 tensor; planner_data paths ('optimizer', 'state.emb.weight.exp_avg')")
def _(out):
    write(out, torchtitan_sd({'step': torch.tensor(3, dtype=torch.int32)}), checkpoint_id='/ckpt/step-3')


@case('n-says-adamw', "form N whose group saves decoupled_weight_decay True (torch's Adam where it has the "
      "option; AdamW sets it): the folder says AdamW")
def _(out):
    model, trainable, osd = base_sd()
    osd['param_groups'][0]['decoupled_weight_decay'] = True
    write(out, nested(model, osd))


@case('f-says-adam', 'form F whose groups save decoupled_weight_decay False '
      '(optimizer.param_groups.{fqn}.decoupled_weight_decay): the folder says Adam')
def _(out):
    write(out, torchtitan_sd({'step': torch.tensor(3, dtype=torch.int32)}, decoupled=False),
          checkpoint_id='/ckpt/step-3')


def torch_saved(value):
    b = io.BytesIO()
    torch.save(value, b)
    return b


@case('f-bytesio', "form F with torchtitan's earlier TrainState: global_avg_losses, global_max_losses and "
      "log_steps as io.BytesIO objects holding torch.save of their lists, so each record pickles an _io.BytesIO "
      "(DefaultSavePlanner.transform_object torch.saves every bytes item): valid, with 12.5.18's warning",
      18, 'warning')
def _(out):
    ts = {'step': torch.tensor(3, dtype=torch.int32), 'global_avg_losses': torch_saved([2.5, 2.25, 2.0]),
          'global_max_losses': torch_saved([3.0, 2.75, 2.5]), 'log_steps': torch_saved([1, 2, 3])}
    C, f, s = save(torchtitan_sd(ts), out, checkpoint_id='/ckpt/step-3')
    write_metadata(out, C, f, s)
    texts = []
    for key in ('global_avg_losses', 'global_max_losses', 'log_steps'):
        _, info = at(s, 'train_state.' + key)
        texts.append(f"DCP: train_state.{key}: the record at byte {info.offset} of {info.relative_path} names Python "
                     f"callables that DCP's load runs (bytes items load with weights_only=False): \"_io.BytesIO\"")
    return warns(*texts)


@case('i', 'form I: a plain optimizer.state_dict() given to dcp.save: optim.state.{i}.{key}, params lists of '
      'ints (the ids of named_parameters() order less frozen ones)')
def _(out):
    model, trainable, osd = base_sd()
    write(out, nested(model, form_i(osd)))


@case('accelerate', "Accelerate's save_state under FSDP SHARDED_STATE_DICT: pytorch_model_fsdp_0/ "
      "(model.{fqn}) and optimizer_0/ (optimizer in form N), two DCP folders of one checkpoint")
def _(out):
    model, trainable, osd = base_sd()
    write(os.path.join(out, 'pytorch_model_fsdp_0'), {'model': model})
    write(os.path.join(out, 'optimizer_0'), {'optimizer': osd})


@case('prefix-app', "DCP's tutorial nesting: app.model.{fqn} and app.optim.state.{fqn}.{key}, "
      "planner_data paths ('app', 'model', 'l1.weight')")
def _(out):
    model, trainable, osd = base_sd()
    write(out, {'app': nested(model, osd)})


@case('version-none', 'form N with storage_meta and version None (an unversioned Metadata of five fields)')
def _(out):
    n_folder(out, fields={'version': None})


@case('file-per-item', 'single_file_per_rank=False: one file per record (__0_0.distcp ... __1_{n}.distcp), '
      'each a torch.save file of one value at offset 0')
def _(out):
    n_folder(out, single_file_per_rank=False)


@case('threads2', 'thread_count=2: two files per rank, bytes items dealt round-robin, tensors (largest '
      'first) to the least-filled file')
def _(out):
    n_folder(out, thread_count=2)


@case('ddp-dedup', 'DDP (every tensor plain, 4 ranks): dedup_save_plans spreads the unsharded items over '
      'ranks 0-3 (the fewest planned bytes so far), so state_dict_metadata is not module order; '
      'planner_data is')
def _(out):
    n_folder(out, world=4, spec=lambda k, t: 'rep')


@case('w8', '8 ranks, every dim a multiple of 8 (emb 16x8, l1 16x8, ln 16): one row chunk per rank and '
      'parameter, 1-row chunks for frozen.weight 8x8')
def _(out):
    model, trainable, osd = base_sd(V=16, E=8, H=16)
    write(out, nested(model, osd), world=8)


@case('cols', 'column-sharded 2-D tensors (RowwiseParallel, dim 1; torch.chunk sizes), 1-D tensors on '
      'dim 0: each 2-D record holds rows of a column block, so a global row is several runs')
def _(out):
    n_folder(out, spec=lambda k, t: 'col')


@case('blocks', '2-D blocks on a 2x2 mesh (4 ranks): rows over the first mesh dim, columns over the '
      'second; 1-D tensors by rows on the first mesh row')
def _(out):
    n_folder(out, world=4, spec=lambda k, t: ('block', 2, 2))


def torch113_flat():
    """The state dict of tests/fixtures/dcp-torch113 (torch 1.13 save_state_dict, 2 ranks, already
    flat, no head.weight): its shapes and bytes items; the tensors' values are this file's own."""
    model, trainable = tiny_model()
    del model['head.weight']
    osd = adamw_state(model, trainable, step=2.0)
    flat = {'model.' + k: v for k, v in model.items()}
    for fqn, st in osd['state'].items():
        for k, v in st.items():
            flat[f'optim.state.{fqn}.{k}'] = v
    flat.update({'optim.param_groups.0.lr': 0.01, 'optim.param_groups.0.betas': (0.9, 0.999),
                 'optim.param_groups.0.params': list(trainable)})
    return flat


@case('torch113', "the save of tests/fixtures/dcp-torch113 redone by this writer with torch 1.13's class paths: "
      "its .metadata is byte for byte the real one (the writer's self-check), its data files of the same sizes "
      "hold other values")
def _(out):
    write(out, torch113_flat(), era='1.13', flatten_sd=False)


@case('records-main', "form N whose records are torch.save zips as current torch writes them: data.pkl, "
      ".format_version, .storage_alignment, byteorder, data/0, version, .data/serialization_id (the other "
      "torch >= 2.3 folders: data.pkl, byteorder, data/0, version, .data/serialization_id; torch 2.0's and "
      "1.13's: data.pkl, data/0, version)")
def _(out):
    n_folder(out, torch_form='main')


@case('bf16', 'bf16 model (model.* bfloat16), AdamW state float32 (mixed precision)')
def _(out):
    model, trainable, osd = base_sd(dtype=torch.bfloat16, state_dtype=torch.float32)
    write(out, nested(model, osd))


# broken folders: one per check of FORMAT.md 12.5. Each builder returns what the core must report:
# `message` the verdict (the first error, 12.5's order), `failures` every error when the case is
# known to give exactly those, `warnings` the DCP warnings it must give. {dir} stands for the
# folder's path as the test passes it; section 10's texts inside are spelled out (`PyTorch: `), names
# are listed quoted as section 10's weights-only warning lists them.

def at(storage, fqn, offs=None):
    for idx, info in storage:
        if idx.fqn == fqn and list(getattr(idx, 'offset', [])) == list(offs or []) and \
                (offs is not None or not hasattr(idx, 'offset')):
            return idx, info
    raise KeyError((fqn, offs))


def only(msg):
    return {'message': msg, 'failures': [msg], 'warnings': []}


def warns(*texts):
    return {'message': None, 'failures': [], 'warnings': list(texts)}


def broken_n(out, osd_edit=None, model_edit=None, **kw):
    model, trainable, osd = base_sd()
    if model_edit:
        model_edit(model)
    if osd_edit:
        osd_edit(osd)
    return save(nested(model, osd), out, **kw)


class Evil:
    """A value whose pickle names posix.system: pickling never runs it, loading would."""

    def __reduce__(self):
        return (os.system, ('true',))


L1 = 'model.l1.weight'  # [7, 6]: rank 0 holds rows 0..4, rank 1 rows 4..7


@case('no-metadata', 'data files of an unfinished save: no .metadata', 1, 'error')
def _(out):
    broken_n(out)
    return only('DCP: {dir} has 2 data files but no .metadata: the save did not finish (DCP writes .metadata last)')


@case('metadata-tmp', 'an unfinished save: only .metadata.tmp (finish renames it last)', 1, 'error')
def _(out):
    C, f, s = broken_n(out)
    write_metadata(out, C, f, s, name='.metadata.tmp')
    return only('DCP: {dir} has 2 data files but no .metadata: the save did not finish (DCP writes .metadata last)')


@case('not-metadata', '.metadata holds a dict, not a Metadata', 2, 'error')
def _(out):
    broken_n(out)
    with open(os.path.join(out, '.metadata'), 'wb') as f:
        pickle.dump({'state_dict_metadata': {}}, f, protocol=4)
    return only('DCP: .metadata holds a dict, not a DCP Metadata')


@case('no-storage-data', 'a Metadata without its storage_data field', 3, 'error')
def _(out):
    C, f, s = broken_n(out)
    write_metadata(out, C, f, s, drop=('storage_data',))
    return only('DCP: .metadata: no storage_data')


@case('sizes-list', "a chunk's sizes pickled as a list, not a torch.Size", 3, 'error')
def _(out):
    C, f, s = broken_n(out)
    f['state_dict_metadata'][L1].chunks[1].sizes = [3, 6]
    write_metadata(out, C, f, s)
    return only(f'DCP: .metadata: state_dict_metadata[{L1}].chunks[1].sizes is a list, expected a torch.Size')


@case('version-9.9', 'a Metadata of version 9.9', 4, 'warning')
def _(out):
    C, f, s = broken_n(out, fields={'version': '9.9'})
    write_metadata(out, C, f, s)
    return warns('DCP: .metadata has version 9.9; ckptscope reads version 1.0.0 and unversioned metadata')


@case('metadata-callable', '.metadata names posix.system (a REDUCE in an extra field), beyond DCP\'s classes',
      5, 'warning')
def _(out):
    C, f, s = broken_n(out)
    f['extra'] = Evil()
    write_metadata(out, C, f, s)
    return warns("DCP: .metadata names Python callables that pickle.load runs, beyond DCP's own classes: "
                 "\"posix.system\"")


@case('no-entry', 'a chunk without its storage entry (its record left unreferenced)', 6, 'error')
def _(out):
    C, f, s = broken_n(out)
    drop = at(s, L1, [4, 0])
    write_metadata(out, C, f, [e for e in s if e[0] is not drop[0]])
    return only(f'DCP: {L1}: chunk at #[4, 0] has no storage entry')


@case('no-entry-bytes', 'a bytes item without its storage entry', 6, 'error')
def _(out):
    C, f, s = broken_n(out)
    drop = at(s, 'optim.param_groups.0.lr')
    write_metadata(out, C, f, [e for e in s if e[0] is not drop[0]])
    return only('DCP: optim.param_groups.0.lr: no storage entry')


@case('duplicate-entry', 'storage_data lists one (fqn, offsets) twice (two equal MetadataIndex keys)', 7, 'error')
def _(out):
    C, f, s = broken_n(out)
    idx, info = at(s, L1, [0, 0])
    twin = metadata_index(C, L1, [0, 0], 0)
    write_metadata(out, C, f, s + [(twin, obj(C._StorageInfo, **info.__dict__))])
    return {'message': f'DCP: storage_data lists {L1} at #[0, 0] twice', 'warnings': []}


@case('stray-entry', 'a storage entry for a chunk state_dict_metadata does not list (its record appended)', 8,
      'warning')
def _(out):
    C, f, s = broken_n(out)
    name = '__0_0.distcp'
    data = torch_save_bytes(torch.zeros(2, 6))
    path = os.path.join(out, name)
    offset = os.path.getsize(path)
    with open(path, 'ab') as fh:
        fh.write(data)
    extra = (metadata_index(C, L1, [2, 0], 2),
             obj(C._StorageInfo, relative_path=name, offset=offset, length=len(data), transform_descriptors=None))
    write_metadata(out, C, f, s + [extra])
    return warns(f'DCP: storage_data names {L1} at #[2, 0], which state_dict_metadata has no chunk for')


@case('dotdot', "a storage entry's relative_path with '..'", 9, 'error')
def _(out):
    C, f, s = broken_n(out)
    idx, info = s[0]
    bad = '../' + info.relative_path
    info.relative_path = bad
    return_text = f'DCP: the storage entry of {idx.fqn} names {bad}, which is not a file name inside {{dir}}'
    write_metadata(out, C, f, s)
    return only(return_text)


@case('missing-file', 'a data file .metadata names is missing', 10, 'error')
def _(out):
    C, f, s = broken_n(out)
    write_metadata(out, C, f, s)
    os.remove(os.path.join(out, '__1_0.distcp'))
    named = [idx for idx, info in s if info.relative_path == '__1_0.distcp']
    return only(f'DCP: __1_0.distcp is missing: it holds {len(named)} records (the first: {named[0].fqn})')


@case('past-end', 'a data file cut short: its last record lies past its end', 11, 'error')
def _(out):
    C, f, s = broken_n(out)
    write_metadata(out, C, f, s)
    path = os.path.join(out, '__1_0.distcp')
    size = os.path.getsize(path) - 16
    with open(path, 'r+b') as fh:
        fh.truncate(size)
    idx, info = max(((i, n) for i, n in s if n.relative_path == '__1_0.distcp'), key=lambda e: e[1].offset)
    return only(f'DCP: {idx.fqn}: bytes {info.offset}..{info.offset + info.length} of __1_0.distcp '
                f'lie past its end ({size} bytes)')


@case('overlap', "two storage entries name one byte range: model.ln.bias's rank-0 chunk points at "
      "model.ln.weight's record (both #[4])", 12, 'error')
def _(out):
    C, f, s = broken_n(out)
    _, w = at(s, 'model.ln.weight', [0])
    _, b = at(s, 'model.ln.bias', [0])
    assert w.relative_path == b.relative_path
    b.offset, b.length = w.offset, w.length
    write_metadata(out, C, f, s)
    return only(f'DCP: {w.relative_path}: the records of model.ln.weight and model.ln.bias overlap at byte {w.offset}')


@case('zstd', "a record stored through the stream.zstd/1 transform (a zstd frame of the torch.save bytes; "
      "transform_descriptors in its _StorageInfo)", 13, 'error')
def _(out):
    C, f, s = broken_n(out, transforms={(L1, (4, 0)): ['stream.zstd/1']})
    write_metadata(out, C, f, s)
    return only(f'DCP: {L1}: stored through stream.zstd/1; ckptscope undoes no stream transform')


def zip_without_data_pkl():
    b = io.BytesIO()
    with zipfile.ZipFile(b, 'w', zipfile.ZIP_STORED) as z:
        z.writestr('archive/version', '3\n')
    return Raw(b.getvalue())


@case('not-torch-save', "a chunk's record is a zip without data.pkl", 14, 'error')
def _(out):
    C, f, s = broken_n(out, records={(L1, (4, 0)): zip_without_data_pkl()})
    write_metadata(out, C, f, s)
    _, info = at(s, L1, [4, 0])
    return only(f'DCP: {L1}: bytes {info.offset}..{info.offset + info.length} of {info.relative_path} are not a '
                f'torch.save record: PyTorch: no data.pkl in this zip: not a torch.save file')


@case('not-archive', "a chunk's record is 130 zero bytes: neither a zip nor a pickle", 14, 'error')
def _(out):
    C, f, s = broken_n(out, records={(L1, (4, 0)): Raw(bytes(130))})
    write_metadata(out, C, f, s)
    _, info = at(s, L1, [4, 0])
    return only(f'DCP: {L1}: bytes {info.offset}..{info.offset + info.length} of {info.relative_path} are not a '
                f'torch.save record: PyTorch: neither a zip nor a pickle: not a torch.save file')


@case('not-tensor', "a chunk's record holds a list", 15, 'error')
def _(out):
    C, f, s = broken_n(out, records={(L1, (4, 0)): [1, 2, 3]})
    write_metadata(out, C, f, s)
    _, info = at(s, L1, [4, 0])
    return only(f'DCP: {L1}: the record at byte {info.offset} of {info.relative_path} holds a list, not a tensor')


@case('record-shape', "a chunk's record holds #[2, 6], its chunk is #[3, 6]", 16, 'error')
def _(out):
    C, f, s = broken_n(out, records={(L1, (4, 0)): torch.zeros(2, 6)})
    write_metadata(out, C, f, s)
    _, info = at(s, L1, [4, 0])
    return only(f'DCP: {L1}: the record at byte {info.offset} of {info.relative_path} holds #[2, 6], '
                f'its chunk is #[3, 6]')


@case('record-dtype', "a chunk's record holds float64, the metadata says float32", 17, 'warning')
def _(out):
    model, _, _ = base_sd()
    C, f, s = broken_n(out, records={(L1, (4, 0)): model['l1.weight'][4:].double().clone()})
    write_metadata(out, C, f, s)
    _, info = at(s, L1, [4, 0])
    return warns(f'DCP: {L1}: the record at byte {info.offset} of {info.relative_path} holds float64, '
                 f'the metadata says float32')


@case('bytes-callable', "a bytes item (top-level key 'extra') whose record names posix.system", 18, 'warning')
def _(out):
    model, trainable, osd = base_sd()
    sd = nested(model, osd)
    sd['extra'] = Evil()
    C, f, s = save(sd, out)
    write_metadata(out, C, f, s)
    _, info = at(s, 'extra')
    return warns(f"DCP: extra: the record at byte {info.offset} of {info.relative_path} names Python callables "
                 f"that DCP's load runs (bytes items load with weights_only=False): \"posix.system\"")


def l1_boxes(r0, r1):
    return lambda k, t: ('explicit', {0: [r0], 1: [r1]}) if k == L1 else 'row'


@case('chunk-outside', 'a chunk of model.l1.weight [7, 6] at #[4, 0] of size #[4, 6] (its record too)', 19, 'error')
def _(out):
    C, f, s = broken_n(out, spec=l1_boxes(([0, 0], [4, 6]), ([4, 0], [4, 6])))
    write_metadata(out, C, f, s)
    return {'message': f'DCP: {L1}: chunk at #[4, 0] of size #[4, 6] lies outside #[7, 6]', 'warnings': []}


@case('chunks-overlap', 'chunks of model.l1.weight at #[0, 0] and #[3, 0], both #[4, 6]', 20, 'error')
def _(out):
    C, f, s = broken_n(out, spec=l1_boxes(([0, 0], [4, 6]), ([3, 0], [4, 6])))
    write_metadata(out, C, f, s)
    return {'message': f'DCP: {L1}: chunks at #[0, 0] and #[3, 0] overlap', 'warnings': []}


@case('coverage-gap', 'chunks of model.l1.weight [7, 6] leave row 4 out (#[0, 0] #[4, 6] and #[5, 0] #[2, 6])',
      21, 'error')
def _(out):
    C, f, s = broken_n(out, spec=l1_boxes(([0, 0], [4, 6]), ([5, 0], [2, 6])))
    write_metadata(out, C, f, s)
    return only(f'DCP: {L1}: its chunks cover 36 of 42 elements')


def ghost(osd):
    osd['state']['ghost.weight'] = {'step': torch.tensor(3.0), 'exp_avg': torch.full((3,), 0.5),
                                    'exp_avg_sq': torch.full((3,), 0.25)}
    osd['param_groups'][0]['params'].append('ghost.weight')


@case('ghost-state', 'optimizer state (and a group entry) for ghost.weight, which the model part lacks', 22, 'error')
def _(out):
    C, f, s = broken_n(out, osd_edit=ghost)
    write_metadata(out, C, f, s)
    return only('DCP: optimizer state for ghost.weight, which the model part does not hold')


def short_exp_avg_sq(osd):
    osd['state']['l1.bias']['exp_avg_sq'] = torch.full((6,), 0.25)


@case('state-shape', "l1.bias's exp_avg_sq is #[6], the parameter #[7]", 23, 'error')
def _(out):
    C, f, s = broken_n(out, osd_edit=short_exp_avg_sq)
    write_metadata(out, C, f, s)
    return only('DCP: l1.bias: exp_avg_sq is #[6], the parameter is #[7]')


@case('state-shape-alone', "Accelerate's optimizer_0/ alone (no model part): l1.bias's exp_avg_sq is #[6], its "
      "exp_avg #[7]", 23, 'error')
def _(out):
    model, trainable, osd = base_sd()
    short_exp_avg_sq(osd)
    write(out, {'optimizer': osd})
    return only('DCP: l1.bias: exp_avg_sq is #[6], exp_avg is #[7]')


@case('bad-step', "l2.bias's step is 2.5", 24, 'error')
def _(out):
    C, f, s = broken_n(out, osd_edit=lambda o: o['state']['l2.bias'].update(step=torch.tensor(2.5)))
    write_metadata(out, C, f, s)
    return {'message': 'DCP: l2.bias: step 2.5 is not a step count'}


def two_groups(osd):
    g0 = osd['param_groups'][0]
    g1 = dict(g0)
    g1['weight_decay'] = 0.0
    g0['params'] = ['emb.weight', 'l1.weight', 'l1.bias', 'ln.weight', 'ln.bias']
    g1['params'] = ['l1.bias', 'l2.weight', 'l2.bias']
    osd['param_groups'].append(g1)


@case('fqn-two-groups', 'l1.bias listed in parameter groups 0 and 1', 25, 'error')
def _(out):
    C, f, s = broken_n(out, osd_edit=two_groups)
    write_metadata(out, C, f, s)
    return only('DCP: l1.bias is listed in parameter groups 0 and 1')


@case('state-without-group', "l2.bias has state, but no group's params lists it", 26, 'warning')
def _(out):
    C, f, s = broken_n(out, osd_edit=lambda o: o['param_groups'][0]['params'].remove('l2.bias'))
    write_metadata(out, C, f, s)
    return warns('DCP: l2.bias has optimizer state but no parameter group lists it')


@case('steps-differ', 'group 0: l1.weight at step 5, the others at 3', 27, 'warning')
def _(out):
    C, f, s = broken_n(out, osd_edit=lambda o: o['state']['l1.weight'].update(step=torch.tensor(5.0)))
    write_metadata(out, C, f, s)
    return warns('DCP: group 0: l1.weight is at step 5, emb.weight at step 3')


@case('never-stepped', 'every trainable parameter at step 1 with all-zero moments (_init_optim_state)', 28,
      'warning')
def _(out):
    def zero(osd):
        for st in osd['state'].values():
            st['step'] = torch.tensor(1.0)
            st['exp_avg'].zero_()
            st['exp_avg_sq'].zero_()
    C, f, s = broken_n(out, osd_edit=zero)
    write_metadata(out, C, f, s)
    return warns(*[f'DCP: {fqn}: step 1 and all-zero moments: the state get_optimizer_state_dict creates for an '
                   f'optimizer that never stepped' for fqn in tiny_model()[1]])


@case('bad-moments', "l1.weight's exp_avg holds 2 NaN and 1 inf, l2.bias's exp_avg_sq 1 negative value: section 5's "
      'warnings, per slot (slots in module order: l1.weight is 1, l2.bias 6), counted by the statistics', 29,
      'warning')
def _(out):
    def spoil(osd):
        m = osd['state']['l1.weight']['exp_avg']
        m[0, 0], m[3, 2], m[6, 5] = float('nan'), float('nan'), float('inf')
        osd['state']['l2.bias']['exp_avg_sq'][4] = -0.5
    C, f, s = broken_n(out, osd_edit=spoil)
    write_metadata(out, C, f, s)
    return {'message': None, 'failures': [], 'diagnostic': False,
            'warnings': ['DCP: parameter 1: m holds 2 NaN and 1 infinite values',
                         'DCP: parameter 6: v holds 1 negative value (a second moment is never negative)']}


@case('no-planner-data', 'flatten_state_dict=False with keys already flat (model.{fqn}, optim.state.{fqn}.{key}): '
      'planner_data None', 30, 'warning')
def _(out):
    model, trainable, osd = base_sd()
    flat, _ = flatten(nested(model, osd), '2.4')
    write(out, flat, flatten_sd=False)
    return warns("DCP: {dir} keeps no planner_data: slots follow the metadata's key order, which is module order "
                 "only when one rank wrote every unsharded item (give --names NAMES.json)")


# ---- writing the folders, and a self-check with the independent reader ------------------------

def tensor_sha256(t):
    import hashlib
    return hashlib.sha256(t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()).hexdigest()


def self_check(out):
    """dcp_truth's reading of every valid folder written under out equals the tensors saved: same
    keys, shapes, dtypes and row-major bytes."""
    import dcp_truth
    valid = [os.path.abspath(os.path.join(out, c['name'])) for c in CASES if c['check'] is None]
    for folder, flat in SOURCES.items():
        if not any(folder == v or folder.startswith(v + os.sep) for v in valid):
            continue
        got = {k['key']: k for k in dcp_truth.one_folder(folder)['keys']}
        if set(got) != set(flat):
            raise SystemExit(f'{folder}: keys differ: {sorted(set(got) ^ set(flat))}')
        for key, v in flat.items():
            if isinstance(v, torch.Tensor):
                k = got[key]
                if k['kind'] != 'tensor' or k['shape'] != list(v.shape) or k['dtype'] != str(v.dtype):
                    raise SystemExit(f'{folder}: {key}: {k.get("dtype")} {k.get("shape")}, '
                                     f'saved {v.dtype} {list(v.shape)}')
                if k['sha256'] != tensor_sha256(v):
                    raise SystemExit(f'{folder}: {key}: values differ from the saved tensor')
            elif got[key]['kind'] != 'bytes':
                raise SystemExit(f'{folder}: {key} is no bytes item')


FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures', 'dcp-torch113')


def check_fixture():
    """The independent reader on the real torch 1.13 folder (FORMAT.md 12.8's facts): its 33 keys,
    56 records (33 in __0_0.distcp, 23 in __1_0.distcp), every tensor reassembled from its chunks."""
    import dcp_truth
    t = dcp_truth.truth(FIXTURE)
    tensors = [k for k in t['keys'] if k['kind'] == 'tensor']
    got = (len(t['keys']), len(t['entries']), {f: v['records'] for f, v in t['files'].items()},
           all(k['sha256'] for k in tensors), t['plannerData'], t['fields'])
    want = (33, 56, {'__0_0.distcp': 33, '__1_0.distcp': 23}, True, None,
            ['state_dict_metadata', 'planner_data', 'storage_data'])
    if got != want:
        raise SystemExit(f'{FIXTURE}: the reader gives {got}, expected {want}')


def check_replica(out):
    """The writer against torch 1.13's own: the redone save's .metadata equals the real one byte for
    byte, and its data files have the real ones' sizes."""
    mine = os.path.join(out, 'torch113')
    for name in sorted(os.listdir(FIXTURE)):
        a, b = os.path.join(mine, name), os.path.join(FIXTURE, name)
        if name == '.metadata':
            with open(a, 'rb') as fa, open(b, 'rb') as fb:
                if fa.read() != fb.read():
                    raise SystemExit(f'{a} differs from {b}')
        elif os.path.getsize(a) != os.path.getsize(b):
            raise SystemExit(f'{a}: {os.path.getsize(a)} bytes, {b} {os.path.getsize(b)}')


def write_case(name, out):
    c = next(c for c in CASES if c['name'] == name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    return c['build'](out)


TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'cases', 'dcp.json')
ABOUT = ('DCP folders (FORMAT.md 12) written by tests/c/dcp_seeds.py, for the C, JS API and CLI tests: '
         'per folder its name (the folder under the writer\'s OUT), what it demonstrates and, for a broken '
         'one, the check of 12.5 it fails, its severity, the code the core gives it (filled by the core), '
         'the verdict `message` (the first error in 12.5\'s order; null when only warnings), `failures` '
         '(every error, when the folder is known to give exactly those) and `warnings` (the DCP warnings '
         'it must give, with statistics read; `diagnostic: false` when they are the report\'s own warnings of '
         'section 5, which carry no check number). Texts are exact; {dir} stands for the folder path as the test passes it. Numbers '
         'print as Python does (step 5.0 as 5); a byte range {o}..{e} is offset..offset + length. '
         'Valid folders give no error and none of the broken folders\' warnings; dcp_truth.py gives '
         'their facts (keys, chunks, byte ranges, planner_data, sha256 of every tensor).')


def table(codes=None):
    codes = codes or {}
    rows = []
    for c in CASES:
        row = {k: c[k] for k in ('name', 'what')}
        if c['check'] is not None:
            row.update(check=c['check'], severity=c['severity'], code=codes.get(c['name']))
            row.update(c['expect'])
        rows.append(row)
    return {'about': ABOUT, 'cases': rows}


def committed_codes():
    if not os.path.exists(TABLE):
        return {}
    with open(TABLE) as f:
        return {c['name']: c.get('code') for c in json.load(f)['cases']}


def main(argv):
    """dcp_seeds.py OUT: every folder under OUT, OUT/cases.json, and a check that the committed
    tests/cases/dcp.json states what the folders give; dcp_seeds.py --table rewrites that table
    (keeping the codes filled in it)."""
    rewrite = argv[1] == '--table'
    out = os.path.join(os.environ.get('TMPDIR', '/tmp'), 'dcp_seeds_table') if rewrite else argv[1]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for c in CASES:
        c['expect'] = write_case(c['name'], os.path.join(out, c['name']))
    self_check(out)
    check_fixture()
    check_replica(out)
    t = table(committed_codes())
    text = json.dumps(t, indent=1, ensure_ascii=False) + '\n'
    if rewrite:
        shutil.rmtree(out)
        with open(TABLE, 'w') as f:
            f.write(text)
        print(f'{len(CASES)} cases in {TABLE}')
        return
    with open(os.path.join(out, 'cases.json'), 'w') as f:
        f.write(text)
    with open(TABLE) as f:
        if f.read() != text:
            raise SystemExit(f'{TABLE} differs from what the folders give: run dcp_seeds.py --table')
    print(f'{len(CASES)} folders in {out}, as {TABLE} states')


if __name__ == '__main__':
    main(sys.argv)
