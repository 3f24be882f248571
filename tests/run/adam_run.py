#!/usr/bin/python3
"""A NumPy float32 Adam / AdamW run, saved at chosen steps: the oracle of tests/js/run.test.mjs.

Prints one JSON object: the layout, and per save the optimizer description and the model-state
description (docs/layout.md "Descriptions for write"), plus the truth the run used: per global
step the gradient of every owner slot and the learning rate. The kernel computes as TorchLean's
CUDA kernel does in float32: beta and 1 - beta each rounded once to float32, m and v updated in
float32, the bias corrections at the slot's own new step t.

Layout (module order): 0 W [8, 16]; 1 b [3]; 2 frozen [2]; 3 tied to 0; 4 a late slot [5] that
first gets a gradient at global step `late` (its own step counter lags). Slot 1 gets no gradient
at the global steps in `skip` (its moments stay bit-identical). The learning rate warms up
linearly over `warmup` steps.

usage: adam_run.py --kind adam|adamw [--seed N] [--saves 3,4,7,8,12] [--beta2 X] [--reset-at S]
  --reset-at S: the optimizer state is dropped after global step S (a restart from step 1)."""
import argparse
import json

import numpy as np

SHAPES = [[8, 16], [3], [2], [8, 16], [5]]
REQUIRES_GRAD = [True, True, False, True, True]
REPRESENTATIVES = [0, 1, None, 0, 4]
OWNERS = [0, 1, 4]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--kind', choices=['adam', 'adamw'], default='adam')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--saves', default='3,4,7,8,12')
    ap.add_argument('--beta1', type=float, default=0.9)
    ap.add_argument('--beta2', type=float, default=0.999)
    ap.add_argument('--eps', type=float, default=1e-8)
    ap.add_argument('--wd', type=float, default=0.01)
    ap.add_argument('--lr', type=float, default=1e-3)
    ap.add_argument('--warmup', type=int, default=5)
    ap.add_argument('--late', type=int, default=2)
    ap.add_argument('--skip', default='8')
    ap.add_argument('--reset-at', type=int, default=0)
    a = ap.parse_args()
    saves = [int(s) for s in a.saves.split(',')]
    skip = {int(s) for s in a.skip.split(',') if s}
    wd = a.wd if a.kind == 'adamw' else 0.0
    f32 = np.float32
    b1, b2 = f32(a.beta1), f32(a.beta2)
    omb1, omb2 = f32(1.0 - a.beta1), f32(1.0 - a.beta2)
    eps = f32(a.eps)
    rng = np.random.default_rng(a.seed)
    theta = [rng.standard_normal(int(np.prod(s))).astype(f32) for s in SHAPES]
    theta[3] = theta[0]   # tied: one storage
    fresh = lambda: ({i: np.zeros_like(theta[i]) for i in OWNERS}, {i: np.zeros_like(theta[i]) for i in OWNERS}, {i: 0 for i in OWNERS})
    m, v, t = fresh()
    out = {'kind': a.kind, 'shapes': SHAPES, 'requiresGrad': REQUIRES_GRAD, 'representatives': REPRESENTATIVES,
           'config': {'kind': a.kind, 'beta1': a.beta1, 'beta2': a.beta2, 'epsilon': a.eps, 'weightDecay': wd},
           'saves': [], 'steps': {}}
    for step in range(1, max(saves) + 1):
        lr = a.lr * min(1.0, step / a.warmup)
        used = {}
        for i in OWNERS:
            if i == 1 and step in skip:
                continue
            if i == 4 and step < a.late:
                continue
            g = (rng.standard_normal(theta[i].size) * 0.1 * (1 + i)).astype(f32)
            if i == 0:
                g[3] = f32(0)   # an element without gradient this step
            t[i] += 1
            m[i] = (b1 * m[i] + omb1 * g).astype(f32)
            v[i] = (b2 * v[i] + omb2 * (g * g)).astype(f32)
            mhat = m[i].astype(np.float64) / (1 - float(b1) ** t[i])
            vhat = v[i].astype(np.float64) / (1 - float(b2) ** t[i])
            d = mhat / (np.sqrt(vhat) + float(eps)) + wd * theta[i].astype(np.float64)
            theta[i] = (theta[i].astype(np.float64) - lr * d).astype(f32)
            used[str(i)] = [float(x) for x in g]
        theta[3] = theta[0]
        out['steps'][str(step)] = {'lr': lr, 'gradients': used}
        if step in saves:
            out['saves'].append({
                'step': step,
                'opt': {'shapes': SHAPES, 'requiresGrad': REQUIRES_GRAD, 'representatives': REPRESENTATIVES,
                        'config': out['config'],
                        'entries': [{'id': i, 'step': t[i], 'm': [float(x) for x in m[i]], 'v': [float(x) for x in v[i]]} for i in OWNERS]},
                'state': {'shapes': SHAPES, 'values': [[float(x) for x in th] for th in theta]},
            })
        if step == a.reset_at:
            m, v, t = fresh()
    print(json.dumps(out))


main()
