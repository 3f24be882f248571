"""The id-keyed optimizer files tests/c/test_fsdp_names.c converted from name-keyed ones
(docs/pytorch.md, `convert optimizer.pt OUT.pt --state MODEL --to ids`), loaded in torch:

* each equals the Adam's own state_dict() saved beside it (keys and their order, groups' values
  and types, ids, every state tensor bit for bit and its dtype), or, with --group-order stored,
  the same state renumbered in the stored list's order;
* torch 1.13's Optimizer.load_state_dict takes it into a fresh Adam/AdamW over the model's
  trainable parameters (a tied one once), which then steps, and one more step equals the step
  of the optimizer that saved the state.
Usage: fsdp_ids_check.py SEEDS_OUT"""

import json
import os
import sys

import torch

SEEDS = sys.argv[1]
manifest = json.load(open(os.path.join(SEEDS, 'manifest.json')))
failures = []
checks = 0

def check(ok, what):
    global checks
    checks += 1
    if not ok:
        failures.append(what)
        print('FAIL', what)

def same_value(a, b):
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype
                and a.shape == b.shape and torch.equal(a.view(-1).view(torch.uint8) if a.numel() else a,
                                                       b.view(-1).view(torch.uint8) if b.numel() else b))
    return type(a) is type(b) and a == b

def same_dict(got, want, where):
    check(list(got.keys()) == list(want.keys()), f'{where}: keys {list(got.keys())} != {list(want.keys())}')
    for k in want:
        if k in got:
            check(same_value(got[k], want[k]), f'{where}[{k!r}]: {got[k]!r} != {want[k]!r}')

def compare(name, reference, renumber=None):
    got = torch.load(os.path.join(SEEDS, name))
    want = torch.load(os.path.join(SEEDS, reference))
    check(list(got.keys()) == ['state', 'param_groups'], f'{name}: top keys {list(got.keys())}')
    if renumber:  # --group-order stored: want's id i is got's renumber[i]
        want = {'state': {renumber[i]: s for i, s in want['state'].items()},
                'param_groups': [dict(g, params=sorted(renumber[i] for i in g['params'])) for g in want['param_groups']]}
        want['state'] = dict(sorted(want['state'].items()))
    check(list(got['state'].keys()) == list(want['state'].keys()), f'{name}: ids {list(got["state"].keys())}')
    for i in want['state']:
        same_dict(got['state'].get(i, {}), want['state'][i], f'{name} state[{i}]')
    check(len(got['param_groups']) == len(want['param_groups']), f'{name}: groups')
    for g, (a, b) in enumerate(zip(got['param_groups'], want['param_groups'])):
        if renumber:
            a = dict(a, params=sorted(a['params']))
        same_dict(a, b, f'{name} param_groups[{g}]')
    return got

# the model and the optimizers, as the seeds script built them

def load_and_step(name, model_file, make_opt):
    got = torch.load(os.path.join(SEEDS, name))
    model = Model()
    model.load_state_dict(torch.load(os.path.join(SEEDS, model_file)))
    opt = make_opt(model)
    try:
        opt.load_state_dict(got)
        ok = True
    except Exception as e:  # noqa: BLE001 (the text is the failure)
        ok = False
        print('load_state_dict:', e)
    check(ok, f'{name}: load_state_dict takes it')
    if not ok:
        return
    x = torch.tensor([[1, 2, 3], [4, 5, 6]])
    opt.zero_grad()
    model(x).square().mean().backward()
    opt.step()
    check(all(float(s['step']) == float(got['state'][i]['step']) + 1 for i, s in opt.state_dict()['state'].items()),
          f'{name}: one more step')

# the seeds script's classes without running it again: its Model is defined before its first save
src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fsdp_names_seeds.py')).read()
ns = {}
exec(compile(src.split('\nmodel = Model()')[0].replace('OUT = sys.argv[1]', 'OUT = None').replace(
    'os.makedirs(OUT, exist_ok=True)', ''), 'fsdp_names_seeds.py', 'exec'), ns)
Model, trainable = ns['Model'], ns['trainable']

compare('names-ids.pt', 'ids.pt')
compare('nested-ids.pt', 'ids.pt')
compare('safetensors-ids.pt', 'ids.pt')
compare('names2-ids.pt', 'ids2.pt')
compare('flat-ids.pt', 'ids2.pt')
compare('flat-reversed-ids.pt', 'ids2.pt')
# stored order: FSDP's list numbered as it stands
ids = manifest['ids']
renumber = {ids[n]: k for k, n in enumerate(manifest['fsdp'])}
compare('names-stored-ids.pt', 'ids.pt', renumber)

load_and_step('names-ids.pt', 'model.pt', lambda m: torch.optim.Adam(trainable(m), lr=1e-2))

def two_groups(m):
    first = {}
    for n, p in m.named_parameters():
        first.setdefault(p, n)
    decay = [p for p in trainable(m) if first[p].endswith('weight') and not first[p].startswith('norm.')]
    nodecay = [p for p in trainable(m) if all(p is not q for q in decay)]
    return torch.optim.AdamW([{'params': decay, 'weight_decay': 0.1}, {'params': nodecay, 'weight_decay': 0.0, 'lr': 5e-3}], lr=1e-2)

load_and_step('names2-ids.pt', 'model2.pt', two_groups)
load_and_step('flat-ids.pt', 'model2.pt', two_groups)

print(f'fsdp_ids_check: {checks} checks, {len(failures)} failed')
sys.exit(1 if failures else 0)
