"""Real torch.save files for tests/c/test_torch_objects.c, and what torch itself reads in them.

For each FILE it writes FILE.expected: the summary test_torch_objects builds from the native
reader's objects, here from torch.load's (the optimizer's path, groups and entries; each model
state dict's path, tensors and ties by storage identity; whether torch.load(weights_only=True)
accepts the file). Hand-made pickles (a storage shorter than declared, a view past its storage)
are written with Python's own pickler and zipfile. Usage: python3 torch_objects_seeds.py DIR"""
import collections
import dataclasses
import io
import os
import pickle
import sys
import zipfile

import torch

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)


def fmt(x):
    x = float(x)
    return str(int(x)) if x.is_integer() else repr(x)


def is_tensor_dict(d):
    return isinstance(d, dict) and d and all(isinstance(k, str) and torch.is_tensor(v) for k, v in d.items())


def summary(obj, optimizers, models):
    lines = []
    for path, sd in optimizers:
        lines.append(f'optimizer {path}')
        group_of = {}
        for g, group in enumerate(sd['param_groups']):
            for i in group['params']:
                group_of.setdefault(i, g)
            betas = ','.join(fmt(b) for b in group['betas']) if 'betas' in group else '-'
            opt = lambda k: fmt(group[k]) if k in group else '-'  # noqa: E731
            flag = lambda k: str(group[k]).lower() if k in group else '-'  # noqa: E731
            lines.append(f"group {g} lr={opt('lr')} betas={betas} eps={opt('eps')} "
                         f"wd={opt('weight_decay')} amsgrad={flag('amsgrad')} "
                         f"maximize={flag('maximize')} params={','.join(map(str, group['params']))}")
        for i, st in sd['state'].items():
            moments = ('exp_avg', 'exp_avg_sq', 'max_exp_avg_sq')
            other = [k for k, v in st.items() if k != 'step' and k not in moments and
                     (torch.is_tensor(v) or isinstance(v, (int, float)))]
            m = st['exp_avg'] if 'exp_avg' in st else next(st[k] for k in other if torch.is_tensor(st[k]))
            step = '-'
            if 'step' in st:
                step = int(st['step'].item() if torch.is_tensor(st['step']) else st['step'])
            lines.append(f"entry {i} group={group_of.get(i, '-')} step={step} "
                         f"shape={','.join(map(str, m.shape))} dtype={str(m.dtype)[6:]} "
                         f"max={'yes' if 'max_exp_avg_sq' in st else 'no'} other={','.join(other) or '-'}")
    for path, sd in models:
        lines.append(f'model {path}')
        seen = []
        for name, t in sd.items():
            ident = (t.storage().data_ptr(), t.storage_offset(), tuple(t.shape), t.stride(), t.dtype)
            tie = next((n for n, i in seen if i == ident), '-')
            seen.append((name, ident))
            lines.append(f"tensor {name} shape={','.join(map(str, t.shape))} dtype={str(t.dtype)[6:]} tie={tie}")
    return lines


def save(name, obj, optimizers, models, legacy=False, names_refused=False):
    path = os.path.join(out, name)
    if legacy:
        torch.save(obj, path, _use_new_zipfile_serialization=False)
    else:
        torch.save(obj, path)
    back = torch.load(path)  # what torch reads: the summary comes from torch's own objects
    lines = summary(back, [(p, get(back, p)) for p in optimizers], [(p, get(back, p)) for p in models])
    lines.append(weights_only_line(path))
    with open(path + '.expected', 'w') as f:
        f.write('\n'.join(lines) + '\n')


def weights_only_line(path):
    """torch.load(weights_only=True) of this torch (1.13): 'takes', or where it stops and why. The
    reason is torch.load's own; where it stops is found by running the same unpickler
    (torch._weights_only_unpickler) over the file's pickles (a zip's data.pkl, or a legacy file's
    five in a row): the opcode it raises at is the last one that started before its read position.
    Its reason must be torch.load's."""
    try:
        torch.load(path, weights_only=True)
        return 'weightsOnly113 takes'
    except pickle.UnpicklingError as e:
        reason = str(e).split('WeightsUnpickler error: ', 1)[1]
    import pickletools
    from torch import _weights_only_unpickler as wo
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            member = next(n for n in z.namelist() if n.endswith('/data.pkl'))
            data = z.read(member)
    else:
        with open(path, 'rb') as f:
            data = f.read()
    f = io.BytesIO(data)
    starts = []
    try:
        while True:  # the pickles in a row, as torch.load reads them
            at = f.tell()
            if at >= len(data):
                raise AssertionError('torch.load refused, the replay did not')
            starts += [at + pos for _, _, pos in pickletools.genops(io.BytesIO(data[at:]))]
            u = wo.Unpickler(f, encoding='utf-8')
            u.persistent_load = lambda pid: pid[1](pid[4])  # the storage type, numel elements
            u.load()
    except (RuntimeError, pickle.UnpicklingError) as e:
        assert str(e) == reason, (str(e), reason)
        op = max(p for p in starts if p < f.tell())
    name = pickletools.code2op[chr(data[op])].name
    return f'weightsOnly113 {name} {op} {reason}'


def get(obj, path):
    """optimizer_states[0] / state_dict / '' """
    if not path:
        return obj
    if path.endswith(']'):
        key, index = path[:-1].split('[')
        return obj[key][int(index)]
    return obj[path]


def train(model, opt, steps=2, dtype=torch.float32):
    for _ in range(steps):
        opt.zero_grad()
        x = torch.randn(4, model[0].in_features if isinstance(model, torch.nn.Sequential) else 3, dtype=dtype)
        model(x).float().sum().backward()
        opt.step()


# AdamW in two groups (decay / no decay, as Hugging Face builds them), zip and legacy
model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
decay = [p for n, p in model.named_parameters() if n.endswith('weight')]
no_decay = [p for n, p in model.named_parameters() if not n.endswith('weight')]
opt = torch.optim.AdamW([{'params': decay, 'weight_decay': 0.01}, {'params': no_decay, 'weight_decay': 0.0}],
                        lr=3e-4, betas=(0.9, 0.95), eps=1e-6)
train(model, opt)
save('adamw.pt', opt.state_dict(), [''], [])
save('adamw-legacy.pt', opt.state_dict(), [''], [], legacy=True)
adamw = opt

# amsgrad: max_exp_avg_sq
opt = torch.optim.Adam(model.parameters(), lr=1e-3, amsgrad=True)
train(model, opt, steps=3)
save('amsgrad.pt', opt.state_dict(), [''], [])


# a model state dict with a tied embedding and a BatchNorm's buffers; and both in one dict
class LM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(10, 4)
        self.norm = torch.nn.BatchNorm1d(4)
        self.lm_head = torch.nn.Linear(4, 10, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, x):
        return self.lm_head(self.norm(self.wte(x)))


lm = LM()
lm_opt = torch.optim.Adam(lm.parameters(), lr=1e-3)
lm(torch.tensor([1, 2, 3])).sum().backward()
lm_opt.step()
save('model.pt', lm.state_dict(), [], [''])
save('model-legacy.bin', lm.state_dict(), [], [''], legacy=True)
save('both.pt', {'model': lm.state_dict(), 'optimizer': lm_opt.state_dict()}, ['optimizer'], ['model'])


# a Lightning-like checkpoint of a bfloat16 model, its hyper-parameters a pickled dataclass
@dataclasses.dataclass
class HParams:
    width: int = 4
    name: str = 'tiny'


bf = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 1)).to(torch.bfloat16)
bf_opt = torch.optim.Adam(bf.parameters(), lr=1e-2)
train(bf, bf_opt, dtype=torch.bfloat16)
save('lightning.ckpt', {'epoch': 1, 'global_step': 2, 'pytorch-lightning_version': '1.9.0', 'state_dict': bf.state_dict(),
                        'optimizer_states': [bf_opt.state_dict()], 'lr_schedulers': [],
                        'hyper_parameters': HParams()}, ['optimizer_states[0]'], ['state_dict'], names_refused=True)


# a pickle that names os.system: a reader that ran it would create this file
class Evil:
    def __reduce__(self):
        return (os.system, (f'touch {os.path.join(out, "ran")}',))


torch.save({'model': lm.state_dict(), 'payload': Evil()}, os.path.join(out, 'evil.pt'))


# hand-made files: a storage's record shorter than it declares, a view past its storage
class Storage:
    def __init__(self, key, numel):
        self.key, self.numel = key, numel


class Tensor:
    def __init__(self, storage, size, stride, offset=0):
        self.storage, self.size, self.stride, self.offset = storage, size, stride, offset

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2,
                (self.storage, self.offset, self.size, self.stride, False, collections.OrderedDict()))


class Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, Storage):
            return ('storage', torch.FloatStorage, obj.key, 'cpu', obj.numel)
        return None


def handmade(name, obj, records):
    buf = io.BytesIO()
    Pickler(buf, protocol=2).dump(obj)
    with zipfile.ZipFile(os.path.join(out, name), 'w', zipfile.ZIP_STORED) as z:
        z.writestr('archive/data.pkl', buf.getvalue())
        for key, data in records.items():
            z.writestr(f'archive/data/{key}', data)
        z.writestr('archive/version', '3\n')


s = Storage('0', 4)
handmade('short-storage.pt', collections.OrderedDict(w=Tensor(s, (4,), (1,))), {'0': bytes(12)})
handmade('view-past.pt', collections.OrderedDict(a=Tensor(s, (2,), (1,)), w=Tensor(s, (2, 3), (3, 1), offset=1)),
         {'0': bytes(16)})
handmade('fine.pt', collections.OrderedDict(a=Tensor(s, (2,), (2,), offset=1), b=Tensor(s, (), ())), {'0': bytes(16)})


# the containers torch.save does not write, from real files
def rezip(src, dst, compress=(), drop=(), add=()):
    with zipfile.ZipFile(os.path.join(out, src)) as zi, zipfile.ZipFile(os.path.join(out, dst), 'w') as zo:
        for info in zi.infolist():
            if any(info.filename.endswith(d) for d in drop):
                continue
            method = zipfile.ZIP_DEFLATED if any(info.filename.endswith(c) for c in compress) else zipfile.ZIP_STORED
            zo.writestr(info.filename, zi.read(info.filename), compress_type=method)
        for name, data in add:
            zo.writestr(name, data)


torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), os.path.join(out, 'script.pt'))
rezip('model.pt', 'compressed.pt', compress=('data/0',))
rezip('model.pt', 'big.pt', add=(('model/byteorder', 'big'),))
rezip('model.pt', 'little.pt', add=(('model/byteorder', 'little'),))
rezip('model.pt', 'no-pickle.pt', drop=('data.pkl',))
rezip('model.pt', 'no-record.pt', drop=('data/0',))


# parameters (_rebuild_parameter) and a tensor subclass (_rebuild_from_type_v2)
class Sub(torch.Tensor):
    pass


save('params.pt', collections.OrderedDict(w=torch.nn.Parameter(torch.ones(2, 3)), v=torch.arange(12.).reshape(3, 4)[:, 1]),
     [], [''])
# (torch 1.13 cannot load a subclass it saved without a __dict__: no .expected for this one)
torch.save(collections.OrderedDict(s=torch.zeros(3).as_subclass(Sub)), os.path.join(out, 'subclass.pt'))

# a step that is no step count (a Python number, as torch before 1.12 wrote it)
sd = opt.state_dict()
sd['state'][1]['step'] = 1.5
torch.save(sd, os.path.join(out, 'bad-step.pt'))
sd['state'][1]['step'] = 7
save('int-step.pt', sd, [''], [])

# _rebuild_tensor_v3 over an UntypedStorage (torch 2's form for new dtypes): the names are
# written through stand-in modules, then renamed in the pickle's GLOBAL text
import types  # noqa: E402

utils = types.ModuleType('xutils')
storage_mod = types.ModuleType('xtorch')


def _rebuild_tensor_v3(*args):
    raise AssertionError('never called')


class UntypedStorage:
    pass


_rebuild_tensor_v3.__module__ = 'xutils'
UntypedStorage.__module__ = 'xtorch'
utils._rebuild_tensor_v3 = _rebuild_tensor_v3
storage_mod.UntypedStorage = UntypedStorage
sys.modules['xutils'], sys.modules['xtorch'] = utils, storage_mod


class V3(Tensor):
    def __reduce__(self):
        return (_rebuild_tensor_v3,
                (self.storage, self.offset, self.size, self.stride, False, collections.OrderedDict(), torch.float16))


class UntypedPickler(pickle.Pickler):
    def persistent_id(self, obj):
        return ('storage', UntypedStorage, obj.key, 'cpu', obj.numel) if isinstance(obj, Storage) else None


buf = io.BytesIO()
UntypedPickler(buf, protocol=2).dump(collections.OrderedDict(h=V3(Storage('0', 12), (2, 3), (3, 1))))
pkl = buf.getvalue().replace(b'cxutils\n', b'ctorch._utils\n').replace(b'cxtorch\n', b'ctorch\n')
with zipfile.ZipFile(os.path.join(out, 'v3.pt'), 'w') as z:
    z.writestr('archive/data.pkl', pkl)
    z.writestr('archive/data/0', bytes(range(12)))
    z.writestr('archive/byteorder', 'little')

# a legacy file whose sys_info (the third pickle) names os.system: the verdict covers all five
with open(os.path.join(out, 'adamw-legacy.pt'), 'rb') as f:
    data = f.read()
f = io.BytesIO(data)
pickle.load(f)
pickle.load(f)
start = f.tell()
info = pickle.load(f)
end = f.tell()
info['x'] = os.system
with open(os.path.join(out, 'legacy-sysinfo.pt'), 'wb') as f:
    f.write(data[:start] + pickle.dumps(info, protocol=2) + data[end:])

# other optimizers' state by name: SGD with momentum (no step, no moments)
sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
train(model, sgd)
save('sgd.pt', sgd.state_dict(), [''], [])

# what newer torch writes in a group: decoupled_weight_decay (AdamW's kind) and param_names
sd = adamw.state_dict()
for g in sd['param_groups']:
    g['decoupled_weight_decay'] = True
sd['param_groups'][0]['param_names'] = ['0.weight', '2.weight']
sd['param_groups'][1]['param_names'] = ['0.bias', '2.bias']
save('decoupled.pt', sd, [''], [])
sd['param_groups'][1]['decoupled_weight_decay'] = False
save('mixed-kind.pt', sd, [''], [])

# one size tuple of 1000 dims named by 1000 tensors through the memo: 2 million dims from a pickle
# of some 20 KB; the reader stops at the tensor whose copies pass the pickle's bytes
import pickletools  # noqa: E402

one = Storage('0', 1)
dims = tuple([1] * 1000)
handmade('shared-size.pt', collections.OrderedDict((f't{k}', Tensor(one, dims, dims)) for k in range(1000)),
         {'0': bytes(4)})
with zipfile.ZipFile(os.path.join(out, 'shared-size.pt')) as z:
    pkl = z.read('archive/data.pkl')
reduces = [pos for op, arg, pos in pickletools.genops(pkl) if op.name == 'REDUCE']
# REDUCE: the root OrderedDict, then per tensor its hooks' OrderedDict and its rebuild
j = (len(pkl) + 64) // 2001
with open(os.path.join(out, 'shared-size.pt.error'), 'w') as f:
    f.write(f'PyTorch: malformed checkpoint at byte {reduces[2 + 2 * j]} of "archive/data.pkl": '
            "values shared through the memo more often than the pickle's bytes allow")


# torch.load(weights_only=True) stops where its unpickler checks what an opcode acts on: hand-
# written pickles, each FILE.expected holding this torch's verdict (weights_only_line)
def raw_pickle(name, data):
    path = os.path.join(out, name)
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_STORED) as z:
        z.writestr('archive/data.pkl', data)
        z.writestr('archive/version', '3\n')
    with open(path + '.expected', 'w') as f:
        f.write(weights_only_line(path) + '\n')


raw_pickle('wo-build-dict.pt', b'\x80\x02}}b.')
raw_pickle('wo-newobj-odict.pt', b'\x80\x02ccollections\nOrderedDict\n)\x81.')
raw_pickle('wo-append-odict.pt', b'\x80\x02ccollections\nOrderedDict\n)RNa.')
raw_pickle('wo-counter.pt', b'\x80\x02ccollections\nCounter\n)R.')
raw_pickle('wo-reduce-none.pt', b'\x80\x02N)R.')
raw_pickle('wo-order.pt', b'\x80\x02(G?\xf0\x00\x00\x00\x00\x00\x00cposix\nsystem\nt.')


# an opcode that changes a tensor torch has rebuilt: SETITEM into it (tensor[0] = 7) and BUILD
# on it (Tensor.set_ to another view of the storage); torch.load(weights_only=True) gives other
# values than the storage record, written to FILE.expected with the opcode's byte
class SetItemTensor(Tensor):
    def __reduce__(self):
        return super().__reduce__() + (None, None, iter([(0, 7)]))


class BuildTensor(Tensor):
    def __reduce__(self):
        return super().__reduce__() + ((self.storage, 2, (2,), (1,)),)


def changed(name, obj, op):
    import struct
    handmade(name, obj, {'0': struct.pack('<4f', 1, 2, 3, 4)})
    path = os.path.join(out, name)
    w = torch.load(path, weights_only=True)['w']
    with zipfile.ZipFile(path) as z:
        pkl = z.read('archive/data.pkl')
    at = next(pos for o, _, pos in pickletools.genops(pkl) if o.name == op)
    with open(path + '.expected', 'w') as f:
        f.write(f'{op} {at} loads w={w.tolist()}\n')


s4 = Storage('0', 4)
changed('wo-setitem-tensor.pt', {'w': SetItemTensor(s4, (2,), (1,))}, 'SETITEM')
changed('wo-build-tensor.pt', {'w': BuildTensor(s4, (2,), (1,))}, 'BUILD')
