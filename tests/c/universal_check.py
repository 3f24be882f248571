"""A universal checkpoint written by ckptscope against the one it must equal (format.md 11.7):
every file of the expected folder is in the written one and nothing else; each torch.save file
read with a restricted unpickler (no deepspeed import, nothing called: DeepSpeed's classes and
getattr become records of their GLOBAL, their NEWOBJ/REDUCE arguments and BUILD state; tensors are
their dtype, shape and raw bytes), then compared: dicts with the same keys in the same order, the
same values (floats bit for bit), tensors bit for bit. Copied files are compared byte for byte.
Usage: python3 universal_check.py WRITTEN EXPECTED [WRITTEN EXPECTED ...] (save_dirs, each with
latest_universal), or --manifest OUT/universal-write/manifest.json (deepspeed_seeds.py's cases)"""
import io
import os
import pickle
import struct
import sys
import zipfile

import torch

WIDTH = {'FloatStorage': 4, 'DoubleStorage': 8, 'HalfStorage': 2, 'BFloat16Storage': 2, 'LongStorage': 8,
         'IntStorage': 4, 'BoolStorage': 1, 'ByteStorage': 1}


class Obj:
    """An object of a class the checker does not load: its GLOBAL, arguments and state"""

    def __init__(self, name, args=(), how='NEWOBJ'):
        self.name, self.args, self.how, self.state = name, args, how, None

    def key(self):
        return ('obj', self.name, self.how, norm(self.args), norm(self.state))


class Cls:
    def __init__(self, name):
        self.name = name

    def __call__(self, *args):
        return Obj(self.name, args, 'REDUCE')

    def __new__(cls, *a):
        return object.__new__(cls)


def make_cls(name):
    class C:
        pass
    C.name = name

    def new(klass, *args):
        o = Obj(name, args, 'NEWOBJ')
        return o
    C.__new__ = new
    return C


class Tensor:
    def __init__(self, storage, offset, size, stride):
        dtype, data, _ = storage
        w = WIDTH[dtype]
        n = 1
        for s in size:
            n *= s
        self.dtype, self.size, self.stride = dtype, tuple(size), tuple(stride)
        # the elements, row-major (contiguous tensors only here)
        self.raw = bytes(data[offset * w:(offset + n) * w])
        assert len(self.raw) == n * w, 'tensor past its storage'

    def key(self):
        return ('tensor', self.dtype, self.size, self.raw)


def norm(v):
    if isinstance(v, (Obj, Tensor)):
        return v.key()
    if isinstance(v, float):
        return ('float', struct.pack('<d', v))
    if isinstance(v, bool) or v is None or isinstance(v, (int, str, bytes)):
        return (type(v).__name__, v)
    if isinstance(v, dict):
        return (type(v).__name__, tuple((norm(k), norm(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(norm(x) for x in v))
    if isinstance(v, (set, frozenset)):
        return (type(v).__name__, tuple(sorted(repr(norm(x)) for x in v)))
    raise TypeError(f'unexpected {type(v)}')


def load(path):
    z = zipfile.ZipFile(path)
    names = z.namelist()
    prefix = names[0].split('/')[0]
    storages = {}

    class U(pickle.Unpickler):
        def find_class(self, mod, name):
            if (mod, name) == ('torch._utils', '_rebuild_tensor_v2'):
                return lambda st, off, size, stride, *rest: Tensor(st, off, size, stride)
            if (mod, name) == ('collections', 'OrderedDict'):
                import collections
                return collections.OrderedDict
            if mod == 'torch' and name.endswith('Storage'):
                return name
            if (mod, name) == ('torch', 'Size'):
                return tuple
            if mod in ('__builtin__', 'builtins') and name in ('set', 'frozenset'):
                return set if name == 'set' else frozenset
            if mod in ('__builtin__', 'builtins') and name == 'getattr':
                return lambda c, attr: Obj('builtins.getattr', (c.name if hasattr(c, 'name') else c, attr), 'REDUCE')
            if mod.startswith('deepspeed.'):
                return make_cls(f'{mod}.{name}')
            raise pickle.UnpicklingError(f'{mod}.{name} is not allowed')

        def persistent_load(self, pid):
            _, dtype, key, _, numel = pid
            if key not in storages:
                storages[key] = (dtype, z.read(f'{prefix}/data/{key}'), numel)
            return storages[key]

    obj = U(io.BytesIO(z.read(f'{prefix}/data.pkl'))).load()

    def fix(v):
        # BUILD on a record: its state
        return v
    return obj


def setstate(self, state):
    self.state = state


Obj.__setstate__ = setstate


def tree(save_dir):
    with open(os.path.join(save_dir, 'latest_universal')) as f:
        tag = f.read()
    out = set()
    for root, _, files in os.walk(os.path.join(save_dir, tag)):
        for f in files:
            out.add(os.path.relpath(os.path.join(root, f), os.path.join(save_dir, tag)))
    return tag, out


def compare(written, expected):
    bad = 0
    tw, fw = tree(written)
    te, fe = tree(expected)
    if tw != te:
        print(f'{written}: latest_universal says {tw!r}, expected {te!r}')
        bad += 1
    if fw != fe:
        print(f'{written}: files {sorted(fw ^ fe)} differ')
        bad += 1
    for rel in sorted(fw & fe):
        a, b = os.path.join(written, tw, rel), os.path.join(expected, te, rel)
        if rel.startswith('mp_rank_'):
            if open(a, 'rb').read() != open(b, 'rb').read():
                print(f'{rel}: not a byte copy')
                bad += 1
            continue
        va, vb = norm(load(a)), norm(load(b))
        if va != vb:
            print(f'{rel}: differs\n  written  {va!r:.600}\n  expected {vb!r:.600}')
            bad += 1
    return bad, len(fw & fe)


if __name__ == '__main__':
    args = sys.argv[1:]
    if args[:1] == ['--manifest']:
        import json
        with open(args[1], encoding='utf-8') as f:
            writes = json.load(f)['writes']
        args = [a for w in writes if w['expected'] for a in (os.path.dirname(w['out']), w['expected'])]
    total_bad = total = 0
    for k in range(0, len(args), 2):
        b, n = compare(args[k], args[k + 1])
        total_bad += b
        total += n
        print(f'{args[k]}: {n} files compared, {b} differ')
    print(f'{total - total_bad} passed, {total_bad} failed')
    sys.exit(1 if total_bad else 0)
