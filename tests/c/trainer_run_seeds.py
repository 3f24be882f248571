"""A Hugging Face Trainer's output folder, made by torch 1.13 for the folder and run tests.

python3 trainer_run_seeds.py DIR writes into DIR:
  out/checkpoint-{10,11,20,100}/   one AdamW run of a small MLP (torch 1.13's AdamW: its groups
                                   carry no decoupled_weight_decay), a learning rate that falls
                                   linearly: optimizer.pt, pytorch_model.bin, scheduler.pt,
                                   trainer_state.json, training_args.bin (optim adamw_torch)
  mislogged/checkpoint-{10,11}/    the same two, with trainer_state.json logging twice the rate
  adam/checkpoint-{10,11}/         the same run under Adam, training_args.bin's optim sgd
  scheduled/checkpoint-{1..30}/    an AdamW run saved at every step, its rate warming up over 10
                                   steps and then falling (3% or more from one step to the next),
                                   config.json naming transformers 4.46.0
  scheduled-4.51/checkpoint-{1..12}/  the same run logged as transformers 4.51 and later log it,
                                   config.json naming 4.51.3
  sharded/checkpoint-10/           the optimizer with a sharded model's index
  said/checkpoint-10/              out's, its groups saying decoupled_weight_decay False (Adam)
                                   where training_args.bin says adamw_torch
  facts.json                       the learning rates torch used at steps 11 and 12, and at
                                   each step of scheduled

trainer_state.json's log_history is written as the Trainer writes it: after each step's
optimizer.step() and lr_scheduler.step(), a log {loss, learning_rate, epoch, step}. Before
transformers 4.51 its learning_rate is the scheduler's get_last_lr()[0] read after the
scheduler's step (Trainer._maybe_log_save_evaluate and _get_learning_rate): the rate the next
step uses. From 4.51 (huggingface/transformers#36973) the rate is read before the scheduler's
step and passed to the log: the rate the step used. Each checkpoint holds the history through
its step; config.json, where written, names the transformers version.

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


def warmup_rate(step):
    """Up linearly over 10 steps, then down by 3% of LR a step."""
    return LR * (step / 10 if step <= 10 else 1 - 0.03 * (step - 10))


def run(root, optimizer_class, optim, saves=SAVES, schedule=rate, version=None):
    logs_used_rate = version is not None and tuple(map(int, version.split('.')[:2])) >= (4, 51)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    opt = optimizer_class(model.parameters(), lr=LR, weight_decay=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda done: schedule(done + 1) / LR)
    x = torch.randn(16, 4)
    history = []
    for step in range(1, max(saves) + 1):
        opt.zero_grad()
        loss = (model(x) ** 2).mean()
        loss.backward()
        opt.step()
        used = sched.get_last_lr()[0]
        sched.step()
        # the Trainer's log of this step, after both steps: the rate of the next step, or (4.51
        # and later) the rate this step used
        logged = used if logs_used_rate else sched.get_last_lr()[0]
        history.append({'loss': round(loss.item(), 4), 'learning_rate': logged, 'epoch': step / STEPS, 'step': step})
        if step in saves:
            d = os.path.join(out, root, f'checkpoint-{step}')
            os.makedirs(d, exist_ok=True)
            torch.save(opt.state_dict(), os.path.join(d, 'optimizer.pt'))
            torch.save(model.state_dict(), os.path.join(d, 'pytorch_model.bin'))
            torch.save(sched.state_dict(), os.path.join(d, 'scheduler.pt'))
            torch.save(TrainingArguments(optim=optim), os.path.join(d, 'training_args.bin'))
            with open(os.path.join(d, 'trainer_state.json'), 'w') as f:
                json.dump({'global_step': step, 'max_steps': STEPS, 'log_history': history}, f, indent=2)
            if version is not None:
                with open(os.path.join(d, 'config.json'), 'w') as f:
                    json.dump({'model_type': 'mlp', 'transformers_version': version}, f, indent=2)


run('out', torch.optim.AdamW, 'adamw_torch')
assert 'decoupled_weight_decay' not in torch.load(os.path.join(out, 'out/checkpoint-10/optimizer.pt'))['param_groups'][0]
run('adam', torch.optim.Adam, 'sgd', saves=(10, 11))
run('scheduled', torch.optim.AdamW, 'adamw_torch', saves=range(1, 31), schedule=warmup_rate, version='4.46.0')
run('scheduled-4.51', torch.optim.AdamW, 'adamw_torch', saves=range(1, 13), schedule=warmup_rate, version='4.51.3')
for n in (10, 11):
    src, dst = os.path.join(out, f'out/checkpoint-{n}'), os.path.join(out, f'mislogged/checkpoint-{n}')
    shutil.copytree(src, dst)
    with open(os.path.join(src, 'trainer_state.json')) as f:
        state = json.load(f)
    for log in state['log_history']:
        log['learning_rate'] *= 2
    with open(os.path.join(dst, 'trainer_state.json'), 'w') as f:
        json.dump(state, f, indent=2)
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
    json.dump({'rate11': rate(11), 'rate12': rate(12), 'scheduled': [warmup_rate(s) for s in range(1, 31)]}, f)
