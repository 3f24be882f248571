"""DeepSpeed conversions (format.md 11.8) loaded in torch: the files tests/c/test_ds_convert.c
wrote for every "converts" entry of the DeepSpeed manifest (tests/c/deepspeed_seeds.py).

* every case: the fp32 model loads with torch.load(weights_only=True) (the optimizer file holds
  its groups' floats, which torch 1.13's weights-only loader reads in no form: docs/pytorch.md),
  the model is built, the fp32 model loads into it strictly, AdamW over its trainable parameters
  (a tied weight once, frozen ones left out, ids as numbered) takes the optimizer file with
  load_state_dict, and one more step runs;
* the writer's folders: both files equal the writer's own values exactly (keys and their order,
  dtypes, shapes, bits, an alias its owner's storage, one storage per step);
* DeepSpeed's own fixtures: every moment and master equal bit for bit to the seed script's
  independent reconstruction of 11.3, frozen parameters and buffers to zero_to_fp32's rules
  (the module's tensor, ZeRO-3 the ranks' fragments), and, for the float32 folders, one more step
  from the converted pair equals the same step from truth.pt's state and weights (the fixtures'
  README does not say how the training loss was computed, so both sides take the same loss here)
  within float32 tolerance.
Usage: ds_convert_check.py SEEDS_OUT CONVERT_OUT FIXTURES"""
import collections
import json
import os
import sys

import torch

SEEDS, OUT, FIXTURES = sys.argv[1:4]
manifest = json.load(open(os.path.join(SEEDS, 'manifest.json')))
values = {c['name']: c['values'] for c in manifest['cases'] if c.get('real')}
failures = []
checks = 0


def check(ok, what):
    global checks
    checks += 1
    if not ok:
        failures.append(what)
        print('FAIL', what)


def same(a, b):
    bits = lambda t: t.reshape(-1).contiguous().view(torch.uint8)
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(bits(a), bits(b))


def raw(path, shape):
    return torch.frombuffer(bytearray(open(path, 'rb').read()), dtype=torch.float32).reshape(shape)


class Holder(torch.nn.Module):
    pass


def build(module_spec, ties):
    """A module with the names of the spec, in its order: parameters, frozen ones, buffers, and
    aliases (the owner's Parameter assigned again: one parameter, two names)."""
    root = Holder()
    params = {}

    def place(name):
        parts = name.split('.')
        m = root
        for p in parts[:-1]:
            if not hasattr(m, p):
                setattr(m, p, Holder())
            m = getattr(m, p)
        return m, parts[-1]

    for name, kind, shape in module_spec:
        m, leaf = place(name)
        if kind == 'buffer':
            m.register_buffer(leaf, torch.zeros(shape))
        elif kind == 'alias':
            setattr(m, leaf, params[ties[name]])
        else:
            params[name] = torch.nn.Parameter(torch.zeros(shape), requires_grad=kind != 'frozen')
            setattr(m, leaf, params[name])
    return root, params


def load_pair(name):
    d = os.path.join(OUT, name)
    model_sd = torch.load(os.path.join(d, 'model.pt'), weights_only=True)
    try:
        opt_sd = torch.load(os.path.join(d, 'optimizer.pt'), weights_only=True)
        check(torch.__version__ >= '2', f'{name}: weights_only load of the optimizer')
    except Exception:  # torch 1.13 reads no float weights-only (docs/pytorch.md)
        check(torch.__version__ < '2', f'{name}: the optimizer loads weights-only from torch 2')
        opt_sd = torch.load(os.path.join(d, 'optimizer.pt'))
    return opt_sd, model_sd


ST_DTYPES = {'F32': torch.float32, 'F64': torch.float64, 'I64': torch.int64, 'I32': torch.int32, 'U8': torch.uint8,
             'BOOL': torch.bool}


def safetensors_model(name, model_sd, aliases):
    """model.safetensors (when written): read as the format says (8-byte length, JSON header, data
    back to back), the same tensors as model.pt, bit for bit, in module order, the aliases left out"""
    path = os.path.join(OUT, name, 'model.safetensors')
    if not os.path.exists(path):
        return
    data = open(path, 'rb').read()
    n = int.from_bytes(data[:8], 'little')
    header = json.loads(data[8:8 + n])
    check(header.pop('__metadata__') == {'format': 'pt'}, f'{name}: safetensors metadata')
    check(list(header) == [k for k in model_sd if k not in aliases], f'{name}: safetensors names {list(header)}')
    end = 0
    for k, e in header.items():
        a, b = e['data_offsets']
        check(a == end, f'{name}: safetensors {k} follows the previous tensor')
        end = b
        t = torch.frombuffer(bytearray(data[8 + n + a:8 + n + b]), dtype=ST_DTYPES[e['dtype']]).reshape(e['shape'])
        check(same(t, model_sd[k]), f'{name}: safetensors {k} equals model.pt\'s')
    check(8 + n + end == len(data), f'{name}: safetensors data ends the file')


def storages_apart(name, opt_sd):
    ptrs = [t.storage().data_ptr() for st in opt_sd['state'].values() for t in st.values() if torch.is_tensor(t)
            and t.numel()]
    check(len(ptrs) == len(set(ptrs)), f'{name}: every state tensor has its own storage')


def writer_case(c):
    name = c['name']
    opt_sd, model_sd = load_pair(name)
    want = torch.load(c['expect'])
    wo, wm = want['optimizer'], want['model']
    check(list(opt_sd) == ['state', 'param_groups'], f'{name}: keys state, param_groups')
    check(list(opt_sd['state']) == list(wo['state']), f'{name}: ids {list(opt_sd["state"])}')
    for i, st in wo['state'].items():
        got = opt_sd['state'].get(i, {})
        check(list(got) == list(st), f'{name}: state[{i}] keys {list(got)} want {list(st)}')
        for k, v in st.items():
            check(k in got and same(got[k], v), f'{name}: state[{i}][{k}]')
    check(len(opt_sd['param_groups']) == len(wo['param_groups']), f'{name}: group count')
    for g, (a, b) in enumerate(zip(opt_sd['param_groups'], wo['param_groups'])):
        check(list(a.items()) == list(b.items()), f'{name}: group {g}: {a} want {b}')
    storages_apart(name, opt_sd)
    check(list(model_sd) == list(wm), f'{name}: model keys {list(model_sd)}')
    for k, v in wm.items():
        check(k in model_sd and same(model_sd[k], v.to(torch.float32) if v.is_floating_point() else v),
              f'{name}: model[{k}]')
    for n, owner in c['ties'].items():
        check(model_sd[n].storage().data_ptr() == model_sd[owner].storage().data_ptr(),
              f'{name}: {n} shares {owner}\'s storage')
    safetensors_model(name, model_sd, set(c['ties']))
    resume(name, c['module'], c['ties'], c['groups'], opt_sd, model_sd)


def resume(name, spec, ties, groups, opt_sd, model_sd):
    """the fp32 model into the module; AdamW over its trainable parameters, group by group;
    the optimizer file loaded; one more step"""
    torch.manual_seed(0)
    model, params = build(spec, ties)
    model.load_state_dict(model_sd, strict=True)
    pg = [{'params': [params[n] for n in names]} for names in groups]
    opt = torch.optim.AdamW(pg, lr=0.01)
    try:
        opt.load_state_dict(opt_sd)
        ok = True
    except Exception as e:  # noqa: BLE001
        ok = False
        print(e)
    check(ok, f'{name}: optimizer.load_state_dict')
    if not ok:
        return
    # the state landed on the parameter of its name
    ids = [n for names in groups for n in names]
    for i, n in enumerate(ids):
        st = opt.state[params[n]]
        if i in opt_sd['state']:
            check(torch.equal(st['exp_avg'], opt_sd['state'][i]['exp_avg']), f'{name}: {n} holds id {i}\'s moments')
    loss = sum((p.float() ** 2).sum() for p in params.values() if p.requires_grad)
    loss.backward()
    opt.step()
    check(all(torch.isfinite(p).all() for p in params.values()), f'{name}: one more step')


# ---- DeepSpeed's own fixtures: the Tiny model of tests/fixtures/deepspeed/README.md ----

class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer('scale', torch.ones(1))
        self.emb = torch.nn.Embedding(11, 6)
        self.l1 = torch.nn.Linear(6, 7)
        self.ln = torch.nn.LayerNorm(7)
        self.l2 = torch.nn.Linear(7, 6)
        self.frozen = torch.nn.Linear(6, 6)
        self.frozen.requires_grad_(False)
        self.head = torch.nn.Linear(6, 11, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, idx):
        x = self.emb(idx)
        h = self.l2(self.ln(torch.relu(self.l1(x)))) + self.frozen(x) * self.scale
        return torch.nn.functional.cross_entropy(self.head(h).reshape(-1, 11), idx.reshape(-1))


TRAINED = ['emb.weight', 'l1.weight', 'l1.bias', 'ln.weight', 'ln.bias', 'l2.weight', 'l2.bias']


def tiny_step(weights, opt_state, groups):
    """one more step (the third) from these weights and this optimizer state; the parameters after it"""
    model = Tiny()
    model.load_state_dict(weights, strict=True)
    named = dict(model.named_parameters())
    opt = torch.optim.AdamW([named[n] for n in TRAINED], lr=0.01, weight_decay=0.01)
    opt.load_state_dict({'state': opt_state, 'param_groups': groups})
    torch.manual_seed(100 + 3)
    idx = torch.randint(0, 11, (2, 3))
    model(idx).backward()
    opt.step()
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def model_states(tag):
    fs = sorted(f for f in os.listdir(tag) if f.endswith('model_states.pt'))
    return [torch.load(os.path.join(tag, f)) for f in
            sorted(fs, key=lambda f: int(f.split('zero_pp_rank_')[1].split('_')[0]) if 'zero_pp' in f else 0)]


def real_case(c):
    name = c['name']
    fx = name[len('real-'):]
    opt_sd, model_sd = load_pair(name)
    tag = os.path.join(c['dir'], 'global_step2')
    vals = values[fx]
    # ids: param_shapes order; every moment and master bit for bit the independent reconstruction
    check(list(opt_sd['state']) == list(range(len(TRAINED))), f'{name}: ids')
    for i, n in enumerate(TRAINED):
        v = vals[n]
        for key in ('exp_avg', 'exp_avg_sq'):
            check(same(opt_sd['state'][i][key], raw(v['keys'][key], v['shape'])), f'{name}: {n} {key} bit for bit')
        check(same(model_sd[n], raw(v['keys']['fp32'], v['shape'])), f'{name}: {n} master bit for bit')
        check(opt_sd['state'][i]['step'].dtype == torch.float32 and opt_sd['state'][i]['step'].shape == () and
              float(opt_sd['state'][i]['step']) == v['step'], f'{name}: {n} step')
    storages_apart(name, opt_sd)
    # zero_to_fp32's values: frozen parameters from the module (ZeRO-3: the ranks' fragments), buffers
    ms = model_states(tag)
    for n in ('frozen.weight', 'frozen.bias'):
        if fx.startswith('zero3'):
            frag = torch.cat([m['frozen_param_fragments'][n] for m in ms])
            shape = ms[0]['frozen_param_shapes'][n]
            want = frag[:shape.numel()].view(shape)
        else:
            want = ms[0]['module'][n]
        check(same(model_sd[n], want.float()), f'{name}: frozen {n} as zero_to_fp32 gives it, float32')
    check(same(model_sd['scale'], ms[0]['module']['scale'].float()), f'{name}: buffer scale')
    check(model_sd['head.weight'].storage().data_ptr() == model_sd['emb.weight'].storage().data_ptr(),
          f'{name}: head.weight shares emb.weight\'s storage')
    check(list(model_sd) == list(ms[0]['module']), f'{name}: the module\'s order')
    safetensors_model(name, model_sd, {'head.weight'})
    # resume: load, then one more step against the same step from truth.pt
    model = Tiny()
    model.load_state_dict(model_sd, strict=True)
    named = dict(model.named_parameters())
    opt = torch.optim.AdamW([named[n] for n in TRAINED], lr=0.01, weight_decay=0.01)
    opt.load_state_dict(opt_sd)
    check(True, f'{name}: optimizer.load_state_dict')
    if 'bf16' in fx:
        return
    truth = torch.load(os.path.join(FIXTURES, 'truth.pt'))
    tw = collections.OrderedDict(truth['weights'])
    tw['scale'] = model_sd['scale']
    tw['head.weight'] = tw['emb.weight']
    after_truth = tiny_step(tw, {i: truth['state'][n] for i, n in enumerate(TRAINED)}, opt_sd['param_groups'])
    after_conv = tiny_step(model_sd, opt_sd['state'], opt_sd['param_groups'])
    for n in TRAINED:
        check(torch.allclose(after_conv[n], after_truth[n], rtol=1e-5, atol=1e-6),
              f'{name}: {n} after one more step equals the step from truth.pt '
              f'(max diff {(after_conv[n] - after_truth[n]).abs().max().item():.3g})')


for c in manifest['converts']:
    if c.get('error'):
        continue
    if c.get('real'):
        real_case(c)
    else:
        writer_case(c)
print(f'{checks} checks, {len(failures)} failed')
sys.exit(1 if failures else 0)
