"""Runs of DCP folders as torchtitan saves them (FORMAT.md 12.1, 12.2: `checkpoint/step-{N}/`, bare
model FQNs, the optimizer in form F), written by dcp_seeds.py's writer after real steps of torch's
own AdamW, for `run` and `diff` over DCP folders (tests/js/dcp-run.test.mjs).

usage: dcp_run_seeds.py OUT

Writes under OUT:
* `checkpoint/step-8/`, `step-9/`, `step-10/`: one run saved after steps 8, 9 and 10 (so the
  folders' names sort otherwise than their numbers);
* `other/step-10/`: another run (another seed) at step 10;
* `renamed/step-10/`: the run's step 10 with `l2.weight` saved as `out.weight` and a parameter
  `extra.weight` added after it (a module of other names);
* `lone/step-3/`: a folder of one step;
and OUT/manifest.json: the trained FQNs, each step's gradients' rms per FQN (the gradient drawn
for step t + 1 is what the pair (t, t + 1) gives back), each saved step's first element of
exp_avg and exp_avg_sq per FQN (as float32 holds them), and the learning rate.
"""
import json
import os
import sys

import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dcp_seeds  # noqa: E402  (the writer: torch's FileSystemWriter as it writes)

LR = 0.001
TRAINABLE = ['emb.weight', 'l1.weight', 'l1.bias', 'ln.weight', 'ln.bias', 'l2.weight', 'l2.bias']


def train(seed, steps):
    """The fixtures' Tiny model trained by torch's AdamW with gradients drawn from `seed`; yields
    (step, model state dict, the optimizer's state keyed by FQN, gradients' rms of that step)."""
    model, trainable = dcp_seeds.tiny_model(seed=seed)
    assert trainable == TRAINABLE
    params = {fqn: torch.nn.Parameter(model[fqn].clone()) for fqn in trainable}
    opt = torch.optim.AdamW([params[f] for f in trainable], lr=LR, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    g = torch.Generator().manual_seed(seed + 100)
    for step in range(1, steps + 1):
        rms = {}
        for fqn in trainable:
            grad = 0.01 * torch.randn(params[fqn].shape, generator=g)
            params[fqn].grad = grad
            rms[fqn] = float(grad.double().pow(2).mean().sqrt())
        opt.step()
        sd = {k: (params[k].detach().clone() if k in params else v.clone()) for k, v in model.items()}
        sd['head.weight'] = sd['emb.weight']  # tied: saved under both names, as DCP saves it
        osd = opt.state_dict()
        ids = osd['param_groups'][0]['params']
        state = {trainable[ids.index(i)]: {k: (v.clone() if torch.is_tensor(v) else v) for k, v in st.items()}
                 for i, st in osd['state'].items()}
        group = {k: v for k, v in osd['param_groups'][0].items() if k != 'params'}
        group['params'] = list(trainable)
        yield step, sd, {'state': state, 'param_groups': [group]}, rms


def torchtitan(out, step, model, osd):
    """torchtitan's step-{N}/: the optimizer (form F), the scheduler, the train state, then the
    model's keys at the top level (dcp_seeds.torchtitan_sd's layout, over this model)."""
    sd = {'optimizer': dcp_seeds.form_f(osd), 'lr_scheduler': dict(dcp_seeds.LR_SCHEDULER),
          'train_state': {'step': torch.tensor(step, dtype=torch.int32)}}
    sd.update(model)
    dcp_seeds.write(out, sd, checkpoint_id=f'/ckpt/step-{step}')


def renamed(model, osd):
    """The model with l2.weight called out.weight and extra.weight after it, and its optimizer."""
    names = {'l2.weight': 'out.weight'}
    m = {}
    for k, v in model.items():
        m[names.get(k, k)] = v
        if k == 'l2.weight':
            m['extra.weight'] = torch.ones(3)
    st = {names.get(k, k): v for k, v in osd['state'].items()}
    st['extra.weight'] = {'step': st['out.weight']['step'].clone(), 'exp_avg': torch.full((3,), 0.001),
                          'exp_avg_sq': torch.full((3,), 1e-6)}
    group = dict(osd['param_groups'][0])
    group['params'] = [names.get(k, k) for k in group['params']] + ['extra.weight']
    return m, {'state': st, 'param_groups': [group]}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    gradients, first = {}, {}
    last = None
    for step, model, osd, rms in train(0, 10):
        gradients[step] = rms
        if step >= 8:
            torchtitan(os.path.join(out, 'checkpoint', f'step-{step}'), step, model, osd)
            first[step] = {fqn: [float(st['exp_avg'].flatten()[0]), float(st['exp_avg_sq'].flatten()[0])]
                           for fqn, st in osd['state'].items()}
        last = (model, osd)
    torchtitan(os.path.join(out, 'renamed', 'step-10'), 10, *renamed(*last))
    for step, model, osd, _ in train(1, 10):
        if step == 10:
            torchtitan(os.path.join(out, 'other', 'step-10'), step, model, osd)
    for step, model, osd, _ in train(0, 3):
        if step == 3:
            torchtitan(os.path.join(out, 'lone', 'step-3'), step, model, osd)
    with open(os.path.join(out, 'manifest.json'), 'w') as f:
        json.dump({'trainable': TRAINABLE, 'lr': LR, 'gradients': gradients, 'first': first}, f, indent=1)


if __name__ == '__main__':
    main()
