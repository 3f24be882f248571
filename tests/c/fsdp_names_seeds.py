"""Name-keyed optimizer files (docs/pytorch.md) made at test time with torch, for
tests/c/test_fsdp_names.c and tests/js/fsdp-names.test.mjs.

FSDP.full_optim_state_dict needs a process group, so the dicts it returns are built here by hand
from a real Adam's state_dict(): its ids become the parameters' names (a shared parameter under
its first name, as FSDP keys it), the groups' `params` lists are put in FSDP's order (the root
unit's own parameters, then the wrapped blocks': not module order), and the file is torch.save'd.
Also form F's flat keys (`state.{fqn}.{key}`, `param_groups.{fqn}.{key}`) and the nested dict
dcp_to_torch_save writes ({'model': ..., 'optimizer': ...}).

Files (OUT/):
  model.pt          the model's state dict (head.weight tied to emb.weight by storage)
  names.pt          one group, FSDP order
  names2.pt         two groups (decay / no decay), each in FSDP order
  flat.pt           form F of names2.pt's optimizer (two learning rates: two groups)
  flat-reversed.pt  the same, the no-decay group's keys first
  flat-interleaved.pt  the same, state keys interleaved across parameters
  nested.pt         {'model': model state dict, 'optimizer': names.pt's dict}
  ids.pt            the Adam's own state_dict() (ids in module order over trainable parameters)
  ids2.pt           the two-group Adam's state_dict()
  renamed.pt        a model with blocks.1.lin renamed blocks.1.proj and norm.weight resized
  untied.pt         the model with head.weight a copy (no tie)
  model.safetensors model.pt as save_pretrained writes it (names sorted, head.weight dropped)
  names.json        the model's state-dict keys in module order
  tiedstate.pt      names.pt with state for head.weight too (the model ties it to emb.weight)
  bad-step.pt       names.pt with blocks.0.lin.bias's step 1.5
  manifest.json     what each file holds (names in module order, ids, groups)
Usage: fsdp_names_seeds.py OUT"""
import collections
import json
import os
import sys

import torch
from torch import nn

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pos = nn.Parameter(torch.zeros(3, 4), requires_grad=False)  # frozen, first in module order
        self.emb = nn.Embedding(10, 4)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.norm = nn.LayerNorm(4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight  # tied: one parameter, two names

    def forward(self, x):
        h = self.emb(x) + self.pos.sum()
        for b in self.blocks:
            h = torch.tanh(b.lin(h))
        return self.head(self.norm(h))


def train(model, opt, steps=2):
    x = torch.tensor([[1, 2, 3], [4, 5, 6]])
    for _ in range(steps):
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()


def names_of(model):
    # a parameter's first name in named_parameters (module walk) order
    out = {}
    for n, p in model.named_parameters():
        out.setdefault(p, n)
    return out


def fsdp_order(names):
    # FSDP's flat order: the root unit's own parameters (not in a wrapped block) first, then each block's
    root = [n for n in names if not n.startswith('blocks.')]
    blocks = [n for n in names if n.startswith('blocks.')]
    return root + blocks


def name_keyed(model, opt):
    sd = opt.state_dict()
    id_to_param = [p for g in opt.param_groups for p in g['params']]
    first = names_of(model)
    id_to_name = [first[p] for p in id_to_param]
    state = {id_to_name[i]: s for i, s in sd['state'].items()}
    groups = []
    for g in sd['param_groups']:
        g = dict(g)
        g['params'] = fsdp_order([id_to_name[i] for i in g['params']])
        groups.append(g)
    # state in FSDP's order too
    order = [n for g in groups for n in g['params']]
    return {'state': {n: state[n] for n in order if n in state}, 'param_groups': groups}


def trainable(model):
    return [p for p in model.parameters() if p.requires_grad]


model = Model()
opt = torch.optim.Adam(trainable(model), lr=1e-2)
train(model, opt)
torch.save(model.state_dict(), os.path.join(OUT, 'model.pt'))
torch.save(opt.state_dict(), os.path.join(OUT, 'ids.pt'))
osd = name_keyed(model, opt)
torch.save(osd, os.path.join(OUT, 'names.pt'))
torch.save({'model': model.state_dict(), 'optimizer': osd}, os.path.join(OUT, 'nested.pt'))

# two groups: decay (weights) and no decay (biases, norm), each in module order as Hugging Face builds them
model2 = Model()
model2.load_state_dict(model.state_dict())
first2 = names_of(model2)
decay = [p for p in trainable(model2) if first2[p].endswith('weight') and not first2[p].startswith('norm.')]
nodecay = [p for p in trainable(model2) if all(p is not q for q in decay)]
opt2 = torch.optim.AdamW([{'params': decay, 'weight_decay': 0.1}, {'params': nodecay, 'weight_decay': 0.0, 'lr': 5e-3}],
                         lr=1e-2)
train(model2, opt2, 3)
torch.save(opt2.state_dict(), os.path.join(OUT, 'ids2.pt'))
torch.save(model2.state_dict(), os.path.join(OUT, 'model2.pt'))
osd2 = name_keyed(model2, opt2)
torch.save(osd2, os.path.join(OUT, 'names2.pt'))

# form F (torch's _flatten_optim_state_dict): state.{fqn}.{key}, param_groups.{fqn}.{key}
flat = {}
for n, s in osd2['state'].items():
    for k, v in s.items():
        flat[f'state.{n}.{k}'] = v
for g in osd2['param_groups']:
    for n in g['params']:
        for k, v in g.items():
            if k != 'params':
                flat[f'param_groups.{n}.{k}'] = v
torch.save(flat, os.path.join(OUT, 'flat.pt'))
# the same with the no-decay group's keys first: form F keeps no group order
flat_reversed = {k: v for k, v in flat.items() if k.startswith('state.')}
for g in reversed(osd2['param_groups']):
    for n in g['params']:
        for k, v in g.items():
            if k != 'params':
                flat_reversed[f'param_groups.{n}.{k}'] = v
torch.save(flat_reversed, os.path.join(OUT, 'flat-reversed.pt'))
# state keys interleaved across FQNs (every exp_avg, then every exp_avg_sq, then every step)
interleaved = {}
for key in ('exp_avg', 'exp_avg_sq', 'step'):
    for n, st in osd2['state'].items():
        interleaved[f'state.{n}.{key}'] = st[key]
interleaved.update({k: v for k, v in flat.items() if k.startswith('param_groups.')})
torch.save(interleaved, os.path.join(OUT, 'flat-interleaved.pt'))

# models that do not pair by name
sd = model.state_dict()
renamed = collections.OrderedDict()
for k, v in sd.items():
    if k.startswith('blocks.1.lin.'):
        k = k.replace('blocks.1.lin.', 'blocks.1.proj.')
    if k == 'norm.weight':
        v = torch.ones(5)
    renamed[k] = v
torch.save(renamed, os.path.join(OUT, 'renamed.pt'))
untied = collections.OrderedDict((k, v.clone()) for k, v in sd.items())
torch.save(untied, os.path.join(OUT, 'untied.pt'))
tied = {'state': dict(osd['state']), 'param_groups': [dict(osd['param_groups'][0])]}
tied['state']['head.weight'] = {k: v.clone() for k, v in osd['state']['emb.weight'].items()}
tied['param_groups'][0]['params'] = osd['param_groups'][0]['params'] + ['head.weight']
torch.save(tied, os.path.join(OUT, 'tiedstate.pt'))
bad = {'state': {k: dict(v) for k, v in osd['state'].items()}, 'param_groups': osd['param_groups']}
bad['state']['blocks.0.lin.bias']['step'] = 1.5
torch.save(bad, os.path.join(OUT, 'bad-step.pt'))



def save_safetensors(sd, path):
    # safetensors' layout (format.md 10.1), as save_pretrained writes it: names sorted, a tied copy dropped
    import struct
    header, blobs, at, seen = {}, [], 0, {}
    for name in sorted(sd):
        t = sd[name].contiguous()
        if t.data_ptr() in seen:
            continue
        seen[t.data_ptr()] = name
        b = t.numpy().tobytes()
        header[name] = {'dtype': 'F32', 'shape': list(t.shape), 'data_offsets': [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    text = json.dumps(header).encode()
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(text)) + text + b''.join(blobs))


save_safetensors(model.state_dict(), os.path.join(OUT, 'model.safetensors'))
json.dump(list(model.state_dict().keys()), open(os.path.join(OUT, 'names.json'), 'w'))
module_names = [n for n, _ in model.named_parameters()]
json.dump({
    'module': list(sd.keys()),
    'trainable': [n for n, p in model.named_parameters() if p.requires_grad],
    'fsdp': osd['param_groups'][0]['params'],
    'fsdp2': [g['params'] for g in osd2['param_groups']],
    'ids': {n: i for i, n in enumerate(n for n, p in model.named_parameters() if p.requires_grad)},
    'steps': {n: float(s['step']) for n, s in osd['state'].items()},
}, open(os.path.join(OUT, 'manifest.json'), 'w'), indent=1)
print('fsdp_names_seeds: wrote', len(os.listdir(OUT)), 'files to', OUT)
