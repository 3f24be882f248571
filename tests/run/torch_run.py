#!/usr/bin/python3
"""A real torch.optim.Adam / AdamW run (PyTorch's own kernels, float32, CPU), saved at chosen
steps, in the output format of adam_run.py (the same layout: a tied slot, a frozen slot, a slot
that starts late, a slot that skips a step; a warmup schedule through LambdaLR). The gradients
are set by hand (p.grad = ...): what matters here is PyTorch's update of the moments, not a model.

usage: torch_run.py --kind adam|adamw [--seed N] [--saves 3,4,7,8,12]"""
import argparse
import json

import torch

SHAPES = [[8, 16], [3], [2], [8, 16], [5]]
REQUIRES_GRAD = [True, True, False, True, True]
REPRESENTATIVES = [0, 1, None, 0, 4]
OWNERS = [0, 1, 4]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--kind', choices=['adam', 'adamw'], default='adam')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--saves', default='3,4,7,8,12')
    ap.add_argument('--lr', type=float, default=1e-3)
    ap.add_argument('--warmup', type=int, default=5)
    a = ap.parse_args()
    saves = [int(s) for s in a.saves.split(',')]
    torch.manual_seed(a.seed)
    w = torch.nn.Parameter(torch.randn(8, 16))
    b = torch.nn.Parameter(torch.randn(3))
    frozen = torch.nn.Parameter(torch.randn(2), requires_grad=False)
    late = torch.nn.Parameter(torch.randn(5))
    slots = [w, b, frozen, w, late]   # slot 3 is slot 0's storage: a tied weight
    owners = {0: w, 1: b, 4: late}
    wd = 0.01 if a.kind == 'adamw' else 0.0
    betas, eps = (0.9, 0.999), 1e-8
    if a.kind == 'adamw':
        opt = torch.optim.AdamW([w, b, late], lr=a.lr, betas=betas, eps=eps, weight_decay=wd)
    else:
        opt = torch.optim.Adam([w, b, late], lr=a.lr, betas=betas, eps=eps)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / a.warmup))
    config = {'kind': a.kind, 'beta1': betas[0], 'beta2': betas[1], 'epsilon': eps, 'weightDecay': wd}
    out = {'kind': a.kind, 'shapes': SHAPES, 'requiresGrad': REQUIRES_GRAD, 'representatives': REPRESENTATIVES,
           'config': config, 'saves': [], 'steps': {}}
    flat = lambda t: [float(x) for x in t.detach().reshape(-1).tolist()]
    for step in range(1, max(saves) + 1):
        used = {}
        for i, p in owners.items():
            skip = (i == 1 and step == 8) or (i == 4 and step < 2)
            p.grad = None if skip else torch.randn_like(p) * 0.1 * (1 + i)
            if not skip:
                used[str(i)] = flat(p.grad)
        lr = opt.param_groups[0]['lr']
        opt.step()
        sched.step()
        out['steps'][str(step)] = {'lr': lr, 'gradients': used}
        if step in saves:
            entries = []
            for i, p in owners.items():
                st = opt.state[p]
                entries.append({'id': i, 'step': int(st['step']), 'm': flat(st['exp_avg']), 'v': flat(st['exp_avg_sq'])})
            out['saves'].append({
                'step': step,
                'opt': {'shapes': SHAPES, 'requiresGrad': REQUIRES_GRAD, 'representatives': REPRESENTATIVES,
                        'config': config, 'entries': entries},
                'state': {'shapes': SHAPES, 'values': [flat(t) for t in slots]},
            })
    print(json.dumps(out))


main()
