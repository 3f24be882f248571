"""The torch.save files test_torch_write made from TLADAMF files, loaded by torch: the state dict
holds what the TLADAMF file holds (steps, moments bit for bit, shapes, the config's exact
floats), torch's Adam/AdamW of a model with that layout (tied weights, a frozen slot) loads it,
and its next step equals the step the TorchLean state implies: bit for bit against the same
state set by hand, and against format.md 7's update with bias corrections at t+1 in float64.
Usage: python3 torch_write_check.py DIR"""
import math
import os
import sys

import numpy as np
import torch

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print('FAIL', what)


def read_facts(path):
    facts = {'entries': [], 'shapes': {}, 'm': {}, 'v': {}}
    with open(path) as f:
        for line in f:
            w = line.split()
            if w[0] == 'entry':
                facts['entries'].append((int(w[1]), int(w[2]), int(w[3])))
            elif w[0] == 'shape':
                facts['shapes'][int(w[1])] = tuple(int(d) for d in w[2:])
            elif w[0] in ('m', 'v'):
                facts[w[0]][int(w[1])] = bytes.fromhex(w[2])
            elif w[0] == 'layout':
                facts['layout'] = w[1:]
            elif w[0] == 'config':
                facts['kind'], facts['dtype'] = w[1], w[2]
                facts['betas'] = (float(w[3]), float(w[4]))
                facts['eps'], facts['wd'] = float(w[5]), float(w[6])
            elif w[0] == 'lr':
                facts['lr'] = float(w[1])
    return facts


class Model(torch.nn.Module):
    """One attribute per slot in slot order: an owner a Parameter of its own, an alias the very
    same Parameter (tied), a frozen slot a Parameter without grad."""

    def __init__(self, facts, dtype):
        super().__init__()
        self.slots = []
        owners = iter(facts['entries'])
        for k, role in enumerate(facts['layout']):
            if role == 'owner':
                idx, slot, _ = next(owners)
                n = math.prod(facts['shapes'][idx])
                values = torch.linspace(-1.0, 1.0, n, dtype=dtype).reshape(facts['shapes'][idx]) + 0.1 * idx
                p = torch.nn.Parameter(values)
            elif role == 'frozen':
                p = torch.nn.Parameter(torch.ones(5, dtype=dtype), requires_grad=False)
            else:
                p = self.slots[int(role[len('alias'):])]
            self.slots.append(p)
            setattr(self, f's{k}', p)


def moments(facts, idx, dtype):
    np_dtype = np.float64 if dtype == torch.float64 else np.float32
    shape = facts['shapes'][idx]
    m = np.frombuffer(facts['m'][idx], dtype='<' + np.dtype(np_dtype).str[1:]).reshape(shape)
    v = np.frombuffer(facts['v'][idx], dtype='<' + np.dtype(np_dtype).str[1:]).reshape(shape)
    return m, v


def optimizer(facts, params, lr):
    cls = torch.optim.AdamW if facts['kind'] == 'adamw' else torch.optim.Adam
    return cls(params, lr=lr, betas=facts['betas'], eps=facts['eps'], weight_decay=facts['wd'])


def gradients(model):
    for p in model.parameters():
        if p.requires_grad:
            p.grad = torch.cos(torch.arange(p.numel(), dtype=p.dtype) * 0.7 + 0.3).reshape(p.shape)


def weights_only_check(name):
    """torch.load(weights_only=True) of this torch: 1.13 stops at the byte ckptscope's report says
    (NAME.wo), its first BINFLOAT, with 'Unsupported operand 71'; a torch from 2.0 on has BINFLOAT."""
    import pickle
    import pickletools
    import zipfile
    path = os.path.join(sys.argv[1], name + '.pt')
    with open(os.path.join(sys.argv[1], name + '.wo')) as f:
        op, byte = f.read().split()
    with zipfile.ZipFile(path) as z:
        pkl = z.read(next(n for n in z.namelist() if n.endswith('/data.pkl')))
    first = next(pos for o, _, pos in pickletools.genops(pkl) if o.name == 'BINFLOAT')
    check(op == 'BINFLOAT' and int(byte) == first, f'{name}: the first BINFLOAT is at byte {first}, not {byte}')
    try:
        torch.load(path, weights_only=True)
        check(not torch.__version__.startswith('1.13'), f'{name}: torch 1.13 loaded a BINFLOAT')
    except pickle.UnpicklingError as e:
        check(torch.__version__.startswith('1.13') and str(e).endswith('Unsupported operand 71'),
              f'{name}: torch {torch.__version__} refused: {e}')


def check_file(name):
    weights_only_check(name)
    facts = read_facts(os.path.join(sys.argv[1], name + '.facts'))
    dtype = torch.float64 if facts['dtype'] == 'float64' else torch.float32
    sd = torch.load(os.path.join(sys.argv[1], name + '.pt'))
    n = len(facts['entries'])
    check(sorted(sd) == ['param_groups', 'state'], f'{name}: the keys {sorted(sd)}')
    check(sorted(sd['state']) == list(range(n)), f'{name}: the state indices')
    (group,) = sd['param_groups']
    check(group['params'] == list(range(n)), f'{name}: params {group["params"]}')
    check(group['lr'] == facts['lr'] and group['betas'] == facts['betas'] and group['eps'] == facts['eps']
          and group['weight_decay'] == facts['wd'], f'{name}: the group {group}')
    for idx, slot, step in facts['entries']:
        s = sd['state'][idx]
        check(sorted(s) == ['exp_avg', 'exp_avg_sq', 'step'], f'{name}: index {idx} keys')
        want = torch.float64 if step >= 1 << 24 else torch.float32
        check(s['step'].dim() == 0 and s['step'].dtype == want and s['step'].item() == step,
              f'{name}: index {idx} step {s["step"]}')
        for key, which in (('exp_avg', 'm'), ('exp_avg_sq', 'v')):
            t = s[key]
            check(t.dtype == dtype and tuple(t.shape) == facts['shapes'][idx], f'{name}: index {idx} {key} {t.dtype} {t.shape}')
            check(t.contiguous().numpy().tobytes() == facts[which][idx], f'{name}: index {idx} {key} bits')

    # torch's optimizer of the model, from the file
    model = Model(facts, dtype)
    trainable = [p for p in model.parameters() if p.requires_grad]
    check(len(trainable) == n, f'{name}: {len(trainable)} trainable parameters, {n} entries')
    opt = optimizer(facts, trainable, lr=1.0)
    opt.load_state_dict(sd)
    # the same state set by hand, on a copy of the model
    ref_model = Model(facts, dtype)
    ref_params = [p for p in ref_model.parameters() if p.requires_grad]
    ref = optimizer(facts, ref_params, lr=facts['lr'])
    start = []
    for (idx, slot, step), p in zip(facts['entries'], ref_params):
        m, v = moments(facts, idx, dtype)
        ref.state[p] = {'step': torch.tensor(float(step), dtype=torch.float64 if step >= 1 << 24 else torch.float32),
                        'exp_avg': torch.tensor(m.copy()), 'exp_avg_sq': torch.tensor(v.copy())}
        start.append(p.detach().clone())
    gradients(model)
    gradients(ref_model)
    opt.step()
    ref.step()
    b1, b2 = facts['betas']
    lr, eps, wd = facts['lr'], facts['eps'], facts['wd']
    for k, ((idx, slot, step), p, q) in enumerate(zip(facts['entries'], trainable, ref_params)):
        got = opt.state[p]
        check(got['step'].item() == step + 1, f'{name}: index {idx} next step {got["step"]}')
        for key in ('exp_avg', 'exp_avg_sq'):
            check(torch.equal(got[key], ref.state[q][key]), f'{name}: index {idx} {key} differs from the hand-set state')
        check(torch.equal(p.detach(), q.detach()), f'{name}: index {idx} the parameter differs from the hand-set state')
        # format.md 7 in float64: the bias corrections at t+1
        m, v = (x.astype(np.float64) for x in moments(facts, idx, dtype))
        g = p.grad.double().numpy()
        theta = start[k].double().numpy()
        m1 = b1 * m + (1 - b1) * g
        v1 = b2 * v + (1 - b2) * g * g
        t = step + 1
        if facts['kind'] == 'adamw':
            theta = theta * (1 - lr * wd)
        want = theta - lr * (m1 / (1 - b1 ** t)) / (np.sqrt(v1 / (1 - b2 ** t)) + eps)
        tol = 1e-12 if dtype == torch.float64 else 1e-6
        check(np.allclose(p.detach().double().numpy(), want, rtol=tol, atol=tol),
              f'{name}: index {idx} the parameter is not format.md 7\'s step at t+1')
        check(np.allclose(got['exp_avg'].double().numpy(), m1, rtol=tol, atol=tol), f'{name}: index {idx} exp_avg')
        # a step at t (not t+1) would be far off: the check tells them apart
        off = theta - lr * (m1 / (1 - b1 ** step)) / (np.sqrt(v1 / (1 - b2 ** step)) + eps)
        if step < 1 << 24:
            check(not np.allclose(off, want, rtol=tol, atol=tol), f'{name}: index {idx} t and t+1 agree')


check_file('tied')
check_file('f64')
print('torch_write_check:', 'ok' if not failures else f'{failures} failed')
sys.exit(1 if failures else 0)
