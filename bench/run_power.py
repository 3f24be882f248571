#!/usr/bin/python3
"""The power of `ckptscope run` against k (docs/runs.md "When the check has power").

Simulates float32 Adam moments of 4096 elements (beta and 1 - beta rounded once to float32, as
TorchLean's kernel holds them), each element with its own gradient scale (lognormal, sigma 1:
scales over about two orders of magnitude) and normal noise, saves them at step tA and tA + k,
and prints the pair's power and verdict as `ckptscope run --json` gives them.

usage: bench/run_power.py [--beta2 0.999,0.95] [--from 100,1000] [--k 1,10,50,100,300,1000,3000]"""
import argparse
import json
import os
import subprocess
import tempfile

import numpy as np

N = 4096
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = ['node', os.path.join(ROOT, 'js', 'cli.js')]


def description(m, v, step, beta2):
    return {'shapes': [[N]], 'requiresGrad': [True], 'representatives': [0],
            'config': {'kind': 'adamw', 'beta1': 0.9, 'beta2': beta2, 'epsilon': 1e-8, 'weightDecay': 0.01},
            'entries': [{'id': 0, 'step': step, 'm': m.astype(float).tolist(), 'v': v.astype(float).tolist()}]}


def pair(beta2, t_a, k, folder):
    f32 = np.float32
    rng = np.random.default_rng(1)
    scale = np.exp(rng.normal(0, 1, N)).astype(f32) * f32(1e-2)
    m, v = np.zeros(N, f32), np.zeros(N, f32)
    b1, b2, c1, c2 = f32(0.9), f32(beta2), f32(1 - 0.9), f32(1 - beta2)
    files = []
    for t in range(1, t_a + k + 1):
        g = (scale * rng.standard_normal(N).astype(f32)).astype(f32)
        m = b1 * m + c1 * g
        v = b2 * v + c2 * (g * g)
        if t in (t_a, t_a + k):
            desc, ckpt = os.path.join(folder, f'{t}.json'), os.path.join(folder, f'{t}.ckpt')
            with open(desc, 'w') as out:
                json.dump(description(m, v, t, beta2), out)
            subprocess.run(CLI + ['write', desc, ckpt], check=True, capture_output=True)
            files.append(ckpt)
    r = subprocess.run(CLI + ['run', *files, '--json'], capture_output=True, text=True)
    return json.loads(r.stdout)['pairs'][0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--beta2', default='0.999,0.95')
    ap.add_argument('--from', dest='start', default='100,1000')
    ap.add_argument('--k', default='1,10,50,100,300,1000,3000')
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        print('beta2  tA     k  power  continuous')
        for beta2 in [float(x) for x in a.beta2.split(',')]:
            for t_a in [int(x) for x in a.start.split(',')]:
                for k in [int(x) for x in a.k.split(',')]:
                    p = pair(beta2, t_a, k, folder)
                    print(f'{beta2:5}  {t_a:4} {k:5}  {p["power"]:.3f}  {json.dumps(p["continuous"])}', flush=True)


if __name__ == '__main__':
    main()
