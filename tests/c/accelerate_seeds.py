"""Accelerate save_state folders for tests/c/test_accelerate.c and tests/js/accelerate.test.mjs.

Accelerate is not imported: each folder is laid out as its source writes it (checkpointing.py
save_accelerator_state, accelerator.py save_state, utils/fsdp_utils.py save_fsdp_model and
save_fsdp_optimizer; names from utils/constants.py), with torch 1.13's torch.save and safetensors
files written by hand. A small model is trained with torch.optim.Adam so each checkpoint's
moments are real. Each folder gets FOLDER.expected.json: each random_states_{p}.pkl's step and keys
as torch.load reads them back. Usage: python3 accelerate_seeds.py DIR"""
import json
import os
import random
import shutil
import struct
import sys

import numpy as np
import torch
from torch import nn

out = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
fixtures = os.path.join(here, '..', 'fixtures')
if os.path.exists(out):
    shutil.rmtree(out)
os.makedirs(out)


def model_of(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 3), nn.LayerNorm(3), nn.Linear(3, 2))


def train(model, opt, steps, seed):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randn(5, model[0].in_features, generator=g)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def save_safetensors(state, path):
    """safetensors' layout: u64 header length, the JSON header padded with spaces to 8 bytes,
    the tensors' bytes back to back in the header's order."""
    header, blobs, at = {}, [], 0
    for name, t in state.items():
        data = t.detach().contiguous().numpy().astype('<f4').tobytes()
        header[name] = {'dtype': 'F32', 'shape': list(t.shape), 'data_offsets': [at, at + len(data)]}
        blobs.append(data)
        at += len(data)
    text = json.dumps(header, separators=(',', ':')).encode()
    text += b' ' * (-len(text) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(text)) + text + b''.join(blobs))


def random_states(step):
    """What save_accelerator_state saves per process (CPU: no cuda key)."""
    return {
        'step': step,
        'random_state': random.getstate(),
        'numpy_random_seed': np.random.get_state(),
        'torch_manual_seed': torch.get_rng_state(),
    }


expected = {}


def save_common(folder, process_count, step, scheduler=None, custom=None):
    for p in range(process_count):
        name = f'random_states_{p}.pkl'
        torch.save(random_states(step), os.path.join(folder, name))
        back = torch.load(os.path.join(folder, name))
        expected.setdefault(folder, {})[name] = {'step': back.get('step'), 'keys': list(back)}
    if scheduler is not None:
        torch.save(scheduler.state_dict(), os.path.join(folder, 'scheduler.bin'))
    if custom is not None:
        torch.save(custom, os.path.join(folder, 'custom_checkpoint_0.pkl'))


def folder(name):
    path = os.path.join(out, name)
    os.makedirs(path, exist_ok=True)
    return path


# plain: one model (safetensors, the default), one optimizer, a scheduler, a scaler, a custom
# object, random states of two processes; Accelerate's step 3
d = folder('plain')
m = model_of(1)
opt = torch.optim.Adam(m.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
train(m, opt, 3, 10)
save_safetensors(m.state_dict(), os.path.join(d, 'model.safetensors'))
torch.save(opt.state_dict(), os.path.join(d, 'optimizer.bin'))
torch.save({'scale': 65536.0, 'growth_factor': 2.0, 'backoff_factor': 0.5, 'growth_interval': 2000,
            '_growth_tracker': 0}, os.path.join(d, 'scaler.pt'))
save_common(d, 2, 3, scheduler=sched, custom={'seen': 15})

# two: safe_serialization=False, two models and two optimizers (i = 1 suffixed)
d = folder('two')
for i in range(2):
    m = model_of(2 + i)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3 * (i + 1))
    train(m, opt, 2, 20 + i)
    suffix = '' if i == 0 else f'_{i}'
    torch.save(m.state_dict(), os.path.join(d, f'pytorch_model{suffix}.bin'))
    torch.save(opt.state_dict(), os.path.join(d, f'optimizer{suffix}.bin'))
save_common(d, 1, 2)

# fsdp-full: FULL_STATE_DICT: pytorch_model_fsdp.bin and a name-keyed optimizer.bin (12.6)
d = folder('fsdp-full')
m = model_of(4)
opt = torch.optim.Adam(m.parameters(), lr=1e-2)
train(m, opt, 2, 40)
torch.save(m.state_dict(), os.path.join(d, 'pytorch_model_fsdp.bin'))
sd = opt.state_dict()
names = [n for n, _ in m.named_parameters()]
torch.save({'state': {names[k]: v for k, v in sd['state'].items()},
            'param_groups': [{**g, 'params': [names[k] for k in g['params']]} for g in sd['param_groups']]},
           os.path.join(d, 'optimizer.bin'))
save_common(d, 2, 2)

# fsdp-sharded: SHARDED_STATE_DICT: pytorch_model_fsdp_0/ ({'model': state dict}) and optimizer_0/
# ({'optimizer': form N}), DCP folders of one checkpoint (fsdp_utils.py save_fsdp_model,
# save_fsdp_optimizer), written by dcp_seeds.py's DCP writer (2 ranks, torch >= 2.4's classes)
sys.path.insert(0, here)
import dcp_seeds  # noqa: E402

d = folder('fsdp-sharded')
dm, _, dosd = dcp_seeds.base_sd()
dcp_seeds.write(os.path.join(d, 'pytorch_model_fsdp_0'), {'model': dm})
dcp_seeds.write(os.path.join(d, 'optimizer_0'), {'optimizer': dosd})
save_common(d, 2, 5)

# fsdp-local: LOCAL_STATE_DICT: a rank file per rank; the optimizer goes to DCP
d = folder('fsdp-local')
for r in range(2):
    torch.save({'_flat_param': torch.zeros(7)}, os.path.join(d, f'pytorch_model_fsdp_rank{r}.bin'))
shutil.copytree(os.path.join(fixtures, 'dcp-torch113'), os.path.join(d, 'optimizer_0'))
save_common(d, 2, 1)

# deepspeed: model.save_checkpoint(output_dir, "pytorch_model"): the tag folder and latest
d = folder('deepspeed')
shutil.copytree(os.path.join(fixtures, 'deepspeed', 'zero2-w2', 'global_step2'), os.path.join(d, 'pytorch_model'))
with open(os.path.join(d, 'latest'), 'w') as f:
    f.write('pytorch_model')
save_common(d, 2, 2)

# project: automatic_checkpoint_naming: checkpoints/checkpoint_{k} after each save_state, k by
# save iteration (10 after 2 by number, not by text); one optimizer trained one step between
# saves; safe_serialization=False (pytorch_model.bin keeps module order)
project = folder('project')
torch.manual_seed(5)
m = nn.Sequential(nn.Linear(16, 12), nn.LayerNorm(12), nn.Linear(12, 8))
opt = torch.optim.Adam(m.parameters(), lr=1e-2)
step = 0
for k in (0, 1, 2, 10):
    train(m, opt, 1, 50 + k)
    step += 1
    d = os.path.join(project, 'checkpoints', f'checkpoint_{k}')
    os.makedirs(d)
    torch.save(m.state_dict(), os.path.join(d, 'pytorch_model.bin'))
    torch.save(opt.state_dict(), os.path.join(d, 'optimizer.bin'))
    save_common(d, 1, step)


# old: a release before Accelerate saved its step; bad: a random_states file that is no dict
d = folder('old')
states = random_states(0)
del states['step']
torch.save(states, os.path.join(d, 'random_states_0.pkl'))
torch.save(m.state_dict(), os.path.join(d, 'pytorch_model.bin'))
torch.save(opt.state_dict(), os.path.join(d, 'optimizer.bin'))
d = folder('bad')
torch.save([1, 2, 3], os.path.join(d, 'random_states_0.pkl'))
torch.save({'step': -1}, os.path.join(d, 'random_states_1.pkl'))

with open(os.path.join(out, 'expected.json'), 'w') as f:
    json.dump({os.path.relpath(k, out): v for k, v in expected.items()}, f, indent=1, sort_keys=True)
