"""A Hugging Face Trainer's output folder, made by torch 1.13 for the folder and run tests.

python3 trainer_run_seeds.py DIR writes into DIR:
  out/checkpoint-{10,11,20,100}/   one AdamW run of a small MLP (torch 1.13's AdamW: its groups
                                   carry no decoupled_weight_decay), a learning rate that falls
                                   linearly: optimizer.pt, pytorch_model.bin, scheduler.pt,
                                   trainer_state.json (log_history: every step's learning rate,
                                   the one that step used), training_args.bin (optim adamw_torch)
  mislogged/checkpoint-{10,11}/    the same two, with trainer_state.json logging twice the rate
  adam/checkpoint-{10,11}/         the same run under Adam, training_args.bin's optim sgd
  sharded/checkpoint-10/           the optimizer with a sharded model's index
  said/checkpoint-10/              out's, its groups saying decoupled_weight_decay False (Adam)
                                   where training_args.bin says adamw_torch
  facts.json                       the learning rates torch used at steps 11 and 12

transformers is not imported: a stand-in package on sys.path defines TrainingArguments where
transformers does, so the pickle names it as the Trainer's does.
"""
import dataclasses
import json
import os
import shutil
import sys
import tempfile

import torch
import torch.nn as nn

out = sys.argv[1]
os.makedirs(out, exist_ok=True)

pkg = tempfile.mkdtemp()
os.makedirs(os.path.join(pkg, 'transformers'))
with open(os.path.join(pkg, 'transformers', '__init__.py'), 'w') as f:
    f.write('')
with open(os.path.join(pkg, 'transformers', 'training_args.py'), 'w') as f:
    f.write('''
from dataclasses import dataclass
@dataclass
class TrainingArguments:
    output_dir: str = "out"
    learning_rate: float = 1e-2
    weight_decay: float = 0.1
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-8
    optim: str = "adamw_torch"
''')
sys.path.insert(0, pkg)
from transformers.training_args import TrainingArguments  # noqa: E402

LR, STEPS, SAVES = 1e-2, 100, (10, 11, 20, 100)


def rate(step):
    """The learning rate step `step` (1-based) uses: falls linearly to a tenth."""
    return LR * (1 - 0.9 * (step - 1) / STEPS)


def trainer_state(step, scale=1.0):
    history = [{'loss': 1.0, 'learning_rate': rate(s) * scale, 'epoch': s / STEPS, 'step': s} for s in range(1, step + 1)]
    return {'global_step': step, 'max_steps': STEPS, 'log_history': history}


def run(root, optimizer_class, optim, saves=SAVES):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    opt = optimizer_class(model.parameters(), lr=LR, weight_decay=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda done: rate(done + 1) / LR)
    x = torch.randn(16, 4)
    for step in range(1, max(saves) + 1):
        opt.zero_grad()
        (model(x) ** 2).mean().backward()
        opt.step()
        sched.step()
        if step in saves:
            d = os.path.join(out, root, f'checkpoint-{step}')
            os.makedirs(d, exist_ok=True)
            torch.save(opt.state_dict(), os.path.join(d, 'optimizer.pt'))
            torch.save(model.state_dict(), os.path.join(d, 'pytorch_model.bin'))
            torch.save(sched.state_dict(), os.path.join(d, 'scheduler.pt'))
            torch.save(TrainingArguments(optim=optim), os.path.join(d, 'training_args.bin'))
            with open(os.path.join(d, 'trainer_state.json'), 'w') as f:
                json.dump(trainer_state(step), f, indent=2)


run('out', torch.optim.AdamW, 'adamw_torch')
assert 'decoupled_weight_decay' not in torch.load(os.path.join(out, 'out/checkpoint-10/optimizer.pt'))['param_groups'][0]
run('adam', torch.optim.Adam, 'sgd', saves=(10, 11))
for n in (10, 11):
    src, dst = os.path.join(out, f'out/checkpoint-{n}'), os.path.join(out, f'mislogged/checkpoint-{n}')
    shutil.copytree(src, dst)
    with open(os.path.join(dst, 'trainer_state.json'), 'w') as f:
        json.dump(trainer_state(n, 2.0), f, indent=2)
sharded = os.path.join(out, 'sharded/checkpoint-10')
os.makedirs(sharded)
shutil.copy(os.path.join(out, 'out/checkpoint-10/optimizer.pt'), sharded)
shutil.copy(os.path.join(out, 'out/checkpoint-10/training_args.bin'), sharded)
index = {'metadata': {'total_size': 0}, 'weight_map': {'0.weight': 'model-00001-of-00002.safetensors', '2.weight': 'model-00002-of-00002.safetensors'}}
with open(os.path.join(sharded, 'model.safetensors.index.json'), 'w') as f:
    json.dump(index, f)
for name in index['weight_map'].values():
    open(os.path.join(sharded, name), 'wb').close()
said = os.path.join(out, 'said/checkpoint-10')
shutil.copytree(os.path.join(out, 'out/checkpoint-10'), said)
sd = torch.load(os.path.join(said, 'optimizer.pt'))
for g in sd['param_groups']:
    g['decoupled_weight_decay'] = False
torch.save(sd, os.path.join(said, 'optimizer.pt'))
with open(os.path.join(out, 'facts.json'), 'w') as f:
    json.dump({'rate11': rate(11), 'rate12': rate(12)}, f)
