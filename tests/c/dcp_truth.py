"""An independent reader of a DCP folder, for tests to compare with ckptscope.

`python3 dcp_truth.py DIR` prints JSON: the names `.metadata` pickles, its version, storage_meta and
planner_data, per key (in state_dict_metadata order) its kind, dtype, shape and chunks with their
storage entries (file, byte range, transforms), per data file its size and record count, and per
tensor key the sha256 of its full row-major bytes reassembled from its chunks (null when a record
cannot be read: a stream transform, a window that is no torch.save record, a chunk that does not
fit; "cannot tell", never a guess).

`python3 dcp_truth.py --index DIR` prints only what `.metadata` says (no record is read): for the
scale bench's folder, whose records hold tens of GB.

`.metadata` is read with a restricted unpickler that builds plain records from DCP's class names
and calls nothing (torch.distributed is never imported); each record is torch.load of its byte
window, weights_only=True."""
import hashlib
import io
import json
import os
import pickle
import sys

import torch

DCP_CLASSES = {
    'Metadata', 'TensorStorageMetadata', 'ChunkStorageMetadata', 'BytesStorageMetadata',
    'MetadataIndex', '_StorageInfo', 'StorageMeta', 'TensorProperties',
}
DCP_MODULES = {
    'torch.distributed.checkpoint.metadata', 'torch.distributed.checkpoint.filesystem',
    'torch.distributed._shard.checkpoint.metadata', 'torch.distributed._shard.checkpoint.filesystem',
    'torch.distributed._shard.sharded_tensor.metadata',
}
ENUMS = {'MEM_FORMAT_ENCODING', '_MEM_FORMAT_ENCODING'}
MEMBERS = ['TORCH_CONTIGUOUS_FORMAT', 'TORCH_CHANNELS_LAST', 'TORCH_PRESERVE_FORMAT']


class Record:
    """A DCP object read as data: its class name and BUILD state."""

    def __init__(self, name):
        self.name = name
        self.state = None

    def get(self, key, default=None):
        if isinstance(self.state, dict):
            return self.state.get(key, default)
        return default


class MemEnum:
    def __init__(self, name):
        self.name = name

    def __call__(self, value):  # older Python: the enum class REDUCE (value,)
        return MEMBERS[value]


def _size(t):
    return tuple(int(x) for x in t)


class Reader(pickle.Unpickler):
    def __init__(self, f):
        super().__init__(f)
        self.names = []

    def find_class(self, module, name):
        full = f'{module}.{name}'
        if full not in self.names:
            self.names.append(full)
        if module in DCP_MODULES and name in DCP_CLASSES:
            cls = type(name, (), {'__new__': lambda c, *a: Record(name)})
            return cls
        if module in DCP_MODULES and name in ENUMS:
            return MemEnum(name)
        if full == 'torch.Size':
            return _size
        if module == 'torch' and isinstance(getattr(torch, name, None), torch.dtype):
            return f'torch.{name}'
        if full == 'torch.serialization._get_layout':
            return lambda s: s
        if full == 'builtins.getattr':
            def member(cls, attr):
                if isinstance(cls, MemEnum) and attr in MEMBERS:
                    return attr
                raise pickle.UnpicklingError(f'getattr({cls!r}, {attr!r})')
            return member
        if module == 'pathlib' and name in ('PosixPath', 'PurePosixPath', 'WindowsPath', 'PureWindowsPath'):
            return lambda *parts: '/'.join(parts).replace('//', '/')
        # anything else stays a name: calling it makes an opaque record, nothing runs
        return lambda *args: Record(full)


# pickle's BUILD on a Record: keep the state as data
Record.__setstate__ = lambda self, state: setattr(self, 'state', state)


def read_metadata(path):
    with open(path, 'rb') as f:
        r = Reader(f)
        md = r.load()
    return md, r.names


def window(dirname, info):
    name = info.get('relative_path')
    if not isinstance(name, str) or os.path.basename(name) != name or name in ('', '.', '..'):
        return None
    p = os.path.join(dirname, name)
    if not os.path.isfile(p):
        return None
    off, length = info.get('offset'), info.get('length')
    if os.path.getsize(p) < off + length:
        return None
    with open(p, 'rb') as f:
        f.seek(off)
        return f.read(length)


def load_record(data):
    try:
        return torch.load(io.BytesIO(data), map_location='cpu', weights_only=True)
    except Exception:
        return None


def row_major_bytes(t):
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def accelerate_parts(dirname):
    """Accelerate's FSDP save read as one checkpoint (format.md 12.7): the two folders of
    checkpoint_{k}/ (pytorch_model_fsdp_0/, optimizer_0/), or optimizer_{i}/ with the model part
    beside it, each as its path from dirname ('' for dirname itself); None for one DCP folder."""
    if not os.path.exists(os.path.join(dirname, '.metadata')):
        if os.path.isdir(os.path.join(dirname, 'optimizer_0')):
            return ['pytorch_model_fsdp_0/', 'optimizer_0/']
        return None
    base = os.path.basename(os.path.normpath(dirname))
    if base.startswith('optimizer_') and base[len('optimizer_'):].isdigit():
        sib = f'../pytorch_model_fsdp_{base[len("optimizer_"):]}/'
        if os.path.exists(os.path.join(dirname, sib, '.metadata')):
            return [sib, '']
    return None


def truth(dirname, records=True):
    parts = accelerate_parts(dirname)
    if parts:
        # the folders' keys side by side, each data file named by its path from dirname
        out = {'keys': [], 'entries': [], 'files': {}, 'plannerData': {}}
        for sub in parts:
            t = one_folder(os.path.join(dirname, sub) if sub else dirname, records)
            for e in t['entries']:
                e['file'] = sub + e['file']
            for k in t['keys']:
                for c in k.get('chunks', []):
                    if 'file' in c:
                        c['file'] = sub + c['file']
                if k.get('entry'):
                    k['entry']['file'] = sub + k['entry']['file']
            out['keys'] += t['keys']
            out['entries'] += t['entries']
            out['files'].update({sub + f: v for f, v in t['files'].items()})
            out['plannerData'].update(t['plannerData'] or {})
        return out
    return one_folder(dirname, records)


def one_folder(dirname, records=True):
    md, names = read_metadata(os.path.join(dirname, '.metadata'))
    if not isinstance(md, Record) or md.name != 'Metadata':
        raise SystemExit(f'{dirname}/.metadata holds no DCP Metadata')
    out = {'classes': names, 'fields': list(md.state.keys()) if isinstance(md.state, dict) else None}
    out['version'] = md.get('version')
    sm = md.get('storage_meta')
    out['storageMeta'] = None if sm is None else {k: v for k, v in sm.state.items()}
    pd = md.get('planner_data')
    out['plannerData'] = None if pd is None else {k: list(v) for k, v in pd.items()}
    entries = []  # (fqn, offsets or None, info) in pickle order
    for idx, info in md.get('storage_data').items():
        entries.append((idx.get('fqn'), idx.get('offset'), info.state))
    out['entries'] = [{'fqn': f, 'offsets': list(o) if o is not None else None, 'file': i.get('relative_path'),
                       'offset': i.get('offset'), 'length': i.get('length'),
                       'transforms': i.get('transform_descriptors')} for f, o, i in entries]
    files = {}
    for e in out['entries']:
        files.setdefault(e['file'], 0)
        files[e['file']] += 1
    out['files'] = {f: {'records': n, 'size': os.path.getsize(os.path.join(dirname, f))
                        if isinstance(f, str) and os.path.isfile(os.path.join(dirname, f)) else None}
                    for f, n in files.items()}
    keys = []
    for fqn, smd in md.get('state_dict_metadata').items():
        k = {'key': fqn}
        if smd.name == 'BytesStorageMetadata':
            k['kind'] = 'bytes'
            hits = [i for f, o, i in entries if f == fqn and o is None]
            k['entry'] = ({'file': hits[0].get('relative_path'), 'offset': hits[0].get('offset'),
                           'length': hits[0].get('length')} if hits else None)
            keys.append(k)
            continue
        props = smd.get('properties').state
        k['kind'] = 'tensor'
        k['dtype'] = props[0]
        k['layout'] = props[1]
        k['memoryFormat'] = props[3]
        k['shape'] = list(smd.get('size'))
        chunks = []
        if records:
            full = torch.zeros(k['shape'], dtype=getattr(torch, props[0].split('.')[1]))
            seen = torch.zeros(k['shape'], dtype=torch.int32)  # how many chunks hold each element
        ok = True
        for c in smd.get('chunks'):
            offs, sizes = list(c.get('offsets')), list(c.get('sizes'))
            hits = [i for f, o, i in entries if f == fqn and o is not None and list(o) == offs]
            ch = {'offsets': offs, 'sizes': sizes}
            if hits:
                info = hits[0]
                ch.update(file=info.get('relative_path'), offset=info.get('offset'), length=info.get('length'),
                          transforms=info.get('transform_descriptors'))
            chunks.append(ch)
            t = None
            if not records:
                ok = False
                continue
            if hits and not hits[0].get('transform_descriptors'):
                data = window(dirname, hits[0])
                t = load_record(data) if data is not None else None
            if not isinstance(t, torch.Tensor) or list(t.shape) != sizes or \
                    any(o < 0 or o + s > n for o, s, n in zip(offs, sizes, k['shape'])) or len(offs) != len(k['shape']):
                ok = False
                continue
            box = tuple(slice(o, o + s) for o, s in zip(offs, sizes))
            full[box] = t.to(full.dtype)
            seen[box] += 1
        k['chunks'] = chunks
        ok = ok and bool((seen == 1).all())  # every element from exactly one chunk
        if records:
            k['sha256'] = hashlib.sha256(row_major_bytes(full)).hexdigest() if ok else None
        keys.append(k)
    out['keys'] = keys
    return out


if __name__ == '__main__':
    if sys.argv[1] == '--index':
        json.dump(truth(sys.argv[2], records=False), sys.stdout)
    else:
        json.dump(truth(sys.argv[1]), sys.stdout, indent=1)
    sys.stdout.write('\n')
