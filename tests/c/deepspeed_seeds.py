"""DeepSpeed ZeRO checkpoints for tests/c/test_deepspeed.c and tests/js/deepspeed.test.mjs.

deepspeed is not imported: a stand-in package on sys.path defines the names DeepSpeed's files
pickle (LossScaler, fragment_address, ZeroStageEnum), as DeepSpeed defines them, so torch.save
writes the same GLOBALs. Two kinds of folders are written under OUT:

* the real fixtures (tests/fixtures/deepspeed, written by DeepSpeed v0.14.4), each parameter's
  exp_avg, exp_avg_sq and fp32 masters reconstructed here by an independent reading of FORMAT.md
  11.3 (torch.load, torch.cat, slicing), saved as raw little-endian float32;
* folders written by this file's own ZeRO writer (ZeRO-1/2/3, BF16_Optimizer, bf16 names, any W,
  several groups, sub-groups, ties, frozen parameters), with the values written; and broken ones,
  one per check of FORMAT.md 11.5, with the exact texts the core must give.

OUT/manifest.json lists every case: its folder, the report expected (ok, kind, worldSize, error
code and message, every failure, every warning) and per parameter the files of its values.
Usage: python3 deepspeed_seeds.py FIXTURES OUT"""
import collections
import copy
import json
import math
import os
import shutil
import struct
import sys
import tempfile

import torch

FIXTURES, OUT = sys.argv[1], sys.argv[2]
shutil.rmtree(OUT, ignore_errors=True)
os.makedirs(OUT)

# ---- the stand-in package: DeepSpeed's names, as DeepSpeed defines them ----
pkg = tempfile.mkdtemp()
files = {
    'deepspeed/__init__.py': '',
    'deepspeed/runtime/__init__.py': '',
    'deepspeed/runtime/fp16/__init__.py': '',
    'deepspeed/runtime/fp16/loss_scaler.py': '''
class LossScaler:
    def __init__(self, scale=1.0):
        self.cur_scale = scale
        self.dynamic = False
''',
    'deepspeed/utils/__init__.py': '',
    'deepspeed/utils/tensor_fragment.py': '''
from dataclasses import dataclass
@dataclass
class fragment_address:
    numel: int
    start: int
''',
    'deepspeed/runtime/zero/__init__.py': '',
    'deepspeed/runtime/zero/config.py': '''
from enum import Enum
class ZeroStageEnum(int, Enum):
    disabled = 0
    optimizer_states = 1
    gradients = 2
    weights = 3
''',
}
for name, text in files.items():
    os.makedirs(os.path.dirname(os.path.join(pkg, name)), exist_ok=True)
    with open(os.path.join(pkg, name), 'w') as f:
        f.write(text)
sys.path.insert(0, pkg)
from deepspeed.runtime.fp16.loss_scaler import LossScaler  # noqa: E402
from deepspeed.runtime.zero.config import ZeroStageEnum  # noqa: E402
from deepspeed.utils.tensor_fragment import fragment_address  # noqa: E402

P = 'DeepSpeed: '
cases = []


def raw(path, t):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as f:
        f.write(t.detach().contiguous().to(torch.float32).numpy().astype('<f4').tobytes())


def values_of(case, parts):
    """parts: {name: {key: tensor, 'step': number}} -> the manifest's values, raw files written"""
    out = {}
    for name, kv in parts.items():
        entry = {'shape': list(kv['fp32'].shape), 'step': kv['step'], 'keys': {}}
        for key in ('exp_avg', 'exp_avg_sq', 'max_exp_avg_sq', 'fp32'):
            if key in kv:
                path = os.path.join(OUT, 'values', case, f'{name}.{key}')
                raw(path, kv[key])
                entry['keys'][key] = path
        out[name] = entry
    return out


# ---- the real fixtures, reconstructed independently ----

def recon(tag):
    fs = sorted(os.listdir(tag))
    optim = sorted([f for f in fs if f.endswith('optim_states.pt')],
                   key=lambda f: int(f.split('zero_pp_rank_')[1].split('_')[0]))
    ms = 'mp_rank_00_model_states.pt' if 'mp_rank_00_model_states.pt' in fs \
        else 'zero_pp_rank_0_mp_rank_00_model_states.pt'
    m0 = torch.load(os.path.join(tag, ms))
    osd = [torch.load(os.path.join(tag, f))['optimizer_state_dict'] for f in optim]
    W = len(osd)
    out = {}
    if 'fp32_flat_groups' in osd[0]:
        for s, shapes in enumerate(m0['param_shapes']):
            off = 0
            for name, shape in shapes.items():
                n = math.prod(shape)
                q = -(-n // W)
                kv = {'step': float(osd[0]['optimizer_state_dict']['state'][s]['step'])}
                for key in ('exp_avg', 'exp_avg_sq', 'fp32'):
                    parts = [(osd[r]['fp32_flat_groups'][s] if key == 'fp32'
                              else osd[r]['optimizer_state_dict']['state'][s][key])[off:off + q] for r in range(W)]
                    kv[key] = torch.cat(parts)[:n].view(shape)
                out[name] = kv
                off += q
    else:
        for g, shapes in enumerate(m0['param_shapes']):
            base = osd[0]['base_optimizer_state']
            pid = base['param_groups'][g]['params'][0]
            flat = {}
            for key in ('exp_avg', 'exp_avg_sq', 'fp32'):
                flat[key] = torch.cat([o['single_partition_of_fp32_groups'][g] if key == 'fp32'
                                       else o['base_optimizer_state']['state'][pid][key] for o in osd])
            off = 0
            for name, shape in shapes.items():
                n = math.prod(shape)
                out[name] = {key: flat[key][off:off + n].view(shape) for key in flat}
                out[name]['step'] = float(base['state'][pid]['step'])
                off += n
    return out, m0, W


KINDS = {'zero1': 'ZeRO-1', 'zero2': 'ZeRO-2', 'zero3': 'ZeRO-3'}
for fx in sorted(os.listdir(FIXTURES)):
    d = os.path.join(FIXTURES, fx)
    if not os.path.isdir(d) or 'universal' in fx:
        continue
    parts, m0, W = recon(os.path.join(d, 'global_step2'))
    cases.append({'name': fx, 'dir': d, 'real': True, 'bf16': 'bf16' in fx, 'ok': True,
                  'kind': KINDS[fx.split('-')[0]], 'worldSize': W, 'error': None, 'failures': [],
                  'warnings': [], 'values': values_of(fx, parts)})
# ds_to_universal's output of zero2-w3-for-universal (format.md 11.7): each tensor one fragment,
# equal bit for bit to the source folder's 11.3 reconstruction
uparts, _, _ = recon(os.path.join(FIXTURES, 'zero2-w3-for-universal', 'global_step2'))
cases.append({'name': 'zero2-w3-universal', 'dir': os.path.join(FIXTURES, 'zero2-w3-universal'), 'real': True,
              'bf16': False, 'ok': True, 'kind': 'ZeRO-2', 'worldSize': None, 'error': None, 'failures': [], 'warnings': [],
              'values': values_of('zero2-w3-universal', uparts), 'universal': True})


# ---- the ZeRO writer ----

class Model:
    """A module's state dict as DeepSpeed sees it: names in module order, which are trainable (and
    their group), ties (alias -> owner), frozen parameters and buffers."""

    def __init__(self, params, groups, ties=(), frozen=(), buffers=(), seed=0):
        g = torch.Generator().manual_seed(seed)
        self.order = []           # module order: (name, kind) kind 'param' | 'alias' | 'frozen' | 'buffer'
        self.shapes = {}
        self.groups = groups      # lists of trainable owner names, in flat-buffer order
        self.ties = dict(ties)    # alias -> owner
        self.master, self.m, self.v = {}, {}, {}
        for name, shape in params:
            self.order.append((name, 'param'))
            self.shapes[name] = torch.Size(shape)
            self.master[name] = torch.randn(shape, generator=g)
            self.m[name] = torch.randn(shape, generator=g) * 1e-2
            self.v[name] = torch.rand(shape, generator=g) * 1e-4
        for name, shape in frozen:
            self.order.append((name, 'frozen'))
            self.shapes[name] = torch.Size(shape)
            self.master[name] = torch.randn(shape, generator=g)
        for name, shape in buffers:
            self.order.append((name, 'buffer'))
            self.shapes[name] = torch.Size(shape)
            self.master[name] = torch.ones(shape)
        for alias, owner in self.ties.items():
            self.order.append((alias, 'alias'))

    def frozen_names(self):
        return [n for n, k in self.order if k == 'frozen']

    def buffer_names(self):
        return [n for n, k in self.order if k == 'buffer']


def group_config(lr=0.01, wd=0.01):
    return {'weight_decay': wd, 'lr': lr, 'betas': (0.9, 0.999), 'eps': 1e-08, 'amsgrad': False, 'foreach': None,
            'maximize': False, 'capturable': False}


def ds_config(stage, bf16, optimizer=None):
    c = {'train_micro_batch_size_per_gpu': 2, 'gradient_accumulation_steps': 1, 'zero_optimization': {'stage': stage},
         'bf16': {'enabled': bf16}, 'zero_allow_untested_optimizer': True}
    if optimizer:
        c['optimizer'] = optimizer
    return c


def padded(t, n):
    return torch.cat([t, torch.zeros(n - t.numel())]) if t.numel() < n else t


def write_zero12(d, model, W, stage=2, bf16=False, bf16_optimizer=False, step=2.0, tag='global_step2',
                 version='0.14.4', config=None, fp16=False, elastic=False, amsgrad=False, uinfo=None,
                 decoupled=None):
    """ZeRO-1/2 (stage_1_and_2.py state_dict) or BF16_Optimizer (bf16_optimizer.py state_dict); an
    fp16 run's module is float16; elastic: base_optimizer_state a list of the groups' lean states
    and the step in base_optimizer_state_step, as for an optimizer keeping it in its groups
    (FusedAdam); amsgrad: torch's Adam(amsgrad=True) state, max_exp_avg_sq beside the moments."""
    vmax = {n: model.v[n] * 1.5 + 1e-6 for n in model.v} if amsgrad else None
    td = os.path.join(d, tag)
    os.makedirs(td, exist_ok=True)
    dt = torch.bfloat16 if bf16 else torch.float16 if fp16 else torch.float32
    G = len(model.groups)
    layout = []
    for names in model.groups:
        N = sum(model.shapes[n].numel() for n in names)
        A = 2 * W
        pad = (A - N % A) % A
        Pg = (N + pad) // W
        srcs = (('fp32', model.master), ('exp_avg', model.m), ('exp_avg_sq', model.v))
        srcs += (('max_exp_avg_sq', vmax),) if amsgrad else ()
        flats = {key: padded(torch.cat([src[n].flatten() for n in names]) if names else torch.zeros(0), N + pad)
                 for key, src in srcs}
        layout.append((names, N, pad, Pg, flats))
    # the module: each group's trainable weights views into one flat storage of the module's dtype
    module = collections.OrderedDict()
    group_views = {}
    for names, N, pad, Pg, flats in layout:
        buf = flats['fp32'].to(dt).clone()
        off = 0
        for n in names:
            k = model.shapes[n].numel()
            group_views[n] = buf[off:off + k].view(model.shapes[n])
            off += k
    frozen_t = {n: model.master[n].to(dt).clone() for n in model.frozen_names()}
    for name, kind in model.order:
        if kind == 'param':
            module[name] = group_views[name]
        elif kind == 'alias':
            module[name] = group_views[model.ties[name]]
        elif kind == 'frozen':
            module[name] = frozen_t[name]
        else:
            module[name] = model.master[name].clone()
    frozen = stage == 2 and not bf16_optimizer
    ms = dict(module=module, buffer_names=model.buffer_names(), optimizer=None,
              param_shapes=[collections.OrderedDict((n, model.shapes[n]) for n in names) for names in model.groups],
              frozen_param_shapes=collections.OrderedDict((n, model.shapes[n]) for n in model.frozen_names())
              if frozen else None,
              shared_params=dict(model.ties),
              frozen_param_fragments=collections.OrderedDict((n, frozen_t[n]) for n in model.frozen_names())
              if frozen else None,
              lr_scheduler=None, data_sampler=None, random_ltd=None, sparse_tensor_module_names=set(),
              skipped_steps=0, global_steps=int(step), global_samples=8 * int(step), dp_world_size=W, mp_world_size=1,
              ds_config=config if config is not None else ds_config(0 if bf16_optimizer else stage, bf16),
              ds_version=version)
    if uinfo is not None:
        ms['universal_checkpoint_info'] = uinfo
    torch.save(ms, os.path.join(td, 'mp_rank_00_model_states.pt'))
    for r in range(W):
        state, groups, fp32, maps = {}, [], [], []
        for g, (names, N, pad, Pg, flats) in enumerate(layout):
            state[g] = {'step': torch.tensor(step), 'exp_avg': flats['exp_avg'][r * Pg:(r + 1) * Pg].clone(),
                        'exp_avg_sq': flats['exp_avg_sq'][r * Pg:(r + 1) * Pg].clone()}
            if amsgrad:
                state[g]['max_exp_avg_sq'] = flats['max_exp_avg_sq'][r * Pg:(r + 1) * Pg].clone()
            groups.append({**group_config(), 'params': [g], **({'amsgrad': True} if amsgrad else {}),
                           **({} if decoupled is None else {'decoupled_weight_decay': decoupled})})
            part = flats['fp32'][r * Pg:(r + 1) * Pg].clone()
            if not bf16_optimizer and r == W - 1:
                part = part[:Pg - pad]
            fp32.append(part)
            mp = collections.OrderedDict()
            off = 0
            for n in names:
                k = model.shapes[n].numel()
                lo, hi = max(off, r * Pg), min(off + k, (r + 1) * Pg)
                if lo < hi:
                    mp[n] = fragment_address(numel=hi - lo, start=lo - r * Pg)
                off += k
            maps.append(mp)
        osd = {}
        if not bf16_optimizer:
            osd.update(loss_scaler=LossScaler(), dynamic_loss_scale=False, overflow=False)
        osd['clip_grad'] = 0.0
        if elastic:
            # stage_1_and_2.py _get_base_optimizer_state: each group's state without the padding
            lean = []
            for g, (names, N, pad, Pg, flats) in enumerate(layout):
                cut = pad if r == W - 1 else 0
                lean.append({k: v[:v.numel() - cut].clone() for k, v in state[g].items() if k != 'step'})
            osd['base_optimizer_state'] = lean
            osd['base_optimizer_state_step'] = int(step)
        else:
            osd['base_optimizer_state'] = {'state': state, 'param_groups': groups}
        osd['single_partition_of_fp32_groups'] = fp32
        if not bf16_optimizer:
            osd['zero_stage'] = ZeroStageEnum.gradients if stage == 2 else ZeroStageEnum.optimizer_states
        osd['group_paddings'] = [layout[g][2] if r == W - 1 else 0 for g in range(G)]
        osd['partition_count'] = [W] * G
        osd['ds_version'] = version
        osd['param_slice_mappings'] = maps
        name = f'{"bf16_" if bf16 else ""}zero_pp_rank_{r}_mp_rank_00_optim_states.pt'
        torch.save({'optimizer_state_dict': osd, 'ds_config': ms['ds_config'], 'ds_version': version},
                   os.path.join(td, name))
    with open(os.path.join(d, 'latest'), 'w') as f:
        f.write(tag)
    return {n: {'fp32': model.master[n], 'exp_avg': model.m[n], 'exp_avg_sq': model.v[n], 'step': step,
                **({'max_exp_avg_sq': vmax[n]} if amsgrad else {})}
            for names in model.groups for n in names}


def write_zero3(d, model, W, bf16=False, step=2.0, sub_group_size=10**9, tag='global_step2', version='0.14.4'):
    """ZeRO-3 (stage3.py _rigid_state_dict, partition_parameters.py)."""
    td = os.path.join(d, tag)
    os.makedirs(td, exist_ok=True)
    dt = torch.bfloat16 if bf16 else torch.float32
    q = {n: -(-model.shapes[n].numel() // W) for n in model.shapes}
    subs = []  # (group, [names])
    for g, names in enumerate(model.groups):
        cur, total = [], 0
        for n in names:
            cur.append(n)
            total += q[n]
            if total >= sub_group_size:
                subs.append((g, cur))
                cur, total = [], 0
        if cur or not names:
            subs.append((g, cur))

    def part(src, n, r):
        return padded(src[n].flatten(), q[n] * W)[r * q[n]:(r + 1) * q[n]]

    placeholders = {}
    for name, kind in model.order:
        if kind in ('param', 'frozen'):
            placeholders[name] = torch.empty(0, dtype=dt)
    for r in range(W):
        module = collections.OrderedDict()
        for name, kind in model.order:
            if kind == 'alias':
                module[name] = placeholders[model.ties[name]]
            elif kind == 'buffer':
                module[name] = model.master[name].clone()
            else:
                module[name] = placeholders[name]
        ms = dict(module=module, buffer_names=model.buffer_names(), optimizer=None,
                  param_shapes=[collections.OrderedDict((n, model.shapes[n]) for n in names) for _, names in subs],
                  frozen_param_shapes=collections.OrderedDict((n, model.shapes[n]) for n in model.frozen_names()),
                  shared_params=dict(model.ties) if r == 0 else {},
                  frozen_param_fragments=collections.OrderedDict(
                      (n, part(model.master, n, r).to(dt)) for n in model.frozen_names()),
                  lr_scheduler=None, data_sampler=None, random_ltd=None, sparse_tensor_module_names=set(),
                  skipped_steps=0, global_steps=int(step), global_samples=8 * int(step), dp_world_size=W,
                  mp_world_size=1, ds_config=ds_config(3, bf16), ds_version=version)
        torch.save(ms, os.path.join(td, f'zero_pp_rank_{r}_mp_rank_00_model_states.pt'))
        state, fp32 = {}, []
        groups = [{**group_config(), 'params': []} for _ in model.groups]
        for s, (g, names) in enumerate(subs):
            cat = lambda src: torch.cat([part(src, n, r) for n in names]) if names else torch.zeros(0)
            state[s] = {'step': torch.tensor(step), 'exp_avg': cat(model.m), 'exp_avg_sq': cat(model.v)}
            fp32.append(cat(model.master))
            groups[g]['params'].append(s)
        osd = {'zero_stage': ZeroStageEnum.weights, 'loss_scaler': LossScaler(), 'dynamic_loss_scale': False,
               'overflow': False, 'partition_count': W,
               'optimizer_state_dict': {'state': state, 'param_groups': groups}, 'fp32_flat_groups': fp32}
        name = f'{"bf16_" if bf16 else ""}zero_pp_rank_{r}_mp_rank_00_optim_states.pt'
        torch.save({'optimizer_state_dict': osd, 'ds_config': ms['ds_config'], 'ds_version': version},
                   os.path.join(td, name))
    with open(os.path.join(d, 'latest'), 'w') as f:
        f.write(tag)
    return {n: {'fp32': model.master[n], 'exp_avg': model.m[n], 'exp_avg_sq': model.v[n], 'step': step}
            for names in model.groups for n in names}


def small(seed=1):
    """emb (tied to head), two layers, a frozen layer, a buffer: one group"""
    return Model([('emb.weight', (11, 6)), ('l1.weight', (7, 6)), ('l1.bias', (7,)), ('l2.weight', (6, 7)),
                  ('l2.bias', (6,))],
                 [['emb.weight', 'l1.weight', 'l1.bias', 'l2.weight', 'l2.bias']],
                 ties=[('head.weight', 'emb.weight')], frozen=[('frozen.weight', (3, 5))], buffers=[('scale', (1,))],
                 seed=seed)


def two_groups(seed=2):
    """decay and no-decay groups, a one-element parameter, a group smaller than W"""
    return Model([('a.weight', (5, 3)), ('a.bias', (5,)), ('b.weight', (4, 5)), ('b.bias', (1,))],
                 [['a.weight', 'b.weight'], ['a.bias', 'b.bias']], seed=seed)


def schema_of(model):
    """11.4's schema: the module's floating tensors but buffers, trainable ones in param_shapes
    or tied to one, an alias represented by its owner"""
    slots = [(n, k) for n, k in model.order if k != 'buffer']
    index = {n: i for i, (n, _) in enumerate(slots)}
    shape = lambda n: list(model.shapes[model.ties.get(n, n)])
    return {'names': [n for n, _ in slots], 'shapes': [shape(n) for n, _ in slots],
            'requiresGrad': [k != 'frozen' for _, k in slots],
            'representatives': [None if k == 'frozen' else index[model.ties[n]] if k == 'alias' else i
                                for i, (n, k) in enumerate(slots)]}


def case(name, d, values=None, ok=True, kind=None, W=None, error=None, failures=None, warnings=(), model=None,
         optimizer_kind=None, kind_said_by=None):
    cases.append({'name': name, 'dir': d, 'real': False, 'ok': ok, 'kind': kind, 'worldSize': W,
                  'error': error, 'failures': failures if failures is not None else ([error] if error else []),
                  'warnings': list(warnings), 'values': values_of(name, values) if values else {},
                  'schema': schema_of(model) if model else None, 'optimizerKind': optimizer_kind,
                  'kindSaidBy': kind_said_by or ('ds_config' if optimizer_kind else None)})


def folder(name):
    d = os.path.join(OUT, 'folders', name)
    os.makedirs(d)
    return d


def err(code, text):
    return {'code': code, 'message': P + text}


# the writer's checkpoints, read whole
for W in (1, 2, 3, 4):
    for stage in (1, 2):
        d = folder(f'w-zero{stage}-w{W}')
        case(f'w-zero{stage}-w{W}', d, write_zero12(d, small(W), W, stage=stage), kind=f'ZeRO-{stage}', W=W,
             model=small(W))
    d = folder(f'w-zero3-w{W}')
    case(f'w-zero3-w{W}', d, write_zero3(d, small(W), W), kind='ZeRO-3', W=W, model=small(W))
d = folder('w-zero2-w3-groups')
case('w-zero2-w3-groups', d, write_zero12(d, two_groups(), 3), kind='ZeRO-2', W=3, model=two_groups())
# the kind (Adam or AdamW) from ds_config.optimizer (engine.py: Adam is AdamW unless adam_w_mode is false)
for label, opt, said in (('adamw', {'type': 'AdamW', 'params': {'lr': 0.01}}, 'adamw'),
                         ('adam', {'type': 'Adam', 'params': {'lr': 0.01}}, 'adamw'),
                         ('adam-no-w-mode', {'type': 'adam', 'params': {'adam_w_mode': False}}, 'adam')):
    d = folder(f'w-kind-{label}')
    case(f'w-kind-{label}', d, write_zero12(d, small(), 2, config=ds_config(2, False, opt)), kind='ZeRO-2', W=2,
         optimizer_kind=said)
# a client optimizer (no ds_config.optimizer) whose groups save decoupled_weight_decay (torch's Adam
# where it has the option; AdamW sets it): 10.3's rule says the kind
for label, decoupled, said in (('groups-adamw', True, 'adamw'), ('groups-adam', False, 'adam')):
    d = folder(f'w-kind-{label}')
    case(f'w-kind-{label}', d, write_zero12(d, small(), 2, decoupled=decoupled), kind='ZeRO-2', W=2,
         optimizer_kind=said, kind_said_by='param_groups')
d = folder('w-zero2-w3-amsgrad')
case('w-zero2-w3-amsgrad', d, write_zero12(d, two_groups(), 3, amsgrad=True), kind='ZeRO-2', W=3)
d = folder('w-zero2-w4-bf16')
case('w-zero2-w4-bf16', d, write_zero12(d, two_groups(), 4, bf16=True), kind='ZeRO-2', W=4)
d = folder('w-bf16-optimizer-w2')
case('w-bf16-optimizer-w2', d, write_zero12(d, small(5), 2, bf16=True, bf16_optimizer=True), kind='BF16_Optimizer',
     W=2)
d = folder('w-zero3-w3-subgroups')
case('w-zero3-w3-subgroups', d, write_zero3(d, two_groups(), 3, sub_group_size=4), kind='ZeRO-3', W=3,
     model=two_groups())
d = folder('w-zero3-w2-bf16-groups')
case('w-zero3-w2-bf16-groups', d, write_zero3(d, two_groups(), 2, bf16=True), kind='ZeRO-3', W=2)


# ---- the checks of 11.5, each on a folder broken from a good one ----

def tagdir(d):
    return os.path.join(d, 'global_step2')


def optim(d, r, bf16=False):
    return os.path.join(tagdir(d), f'{"bf16_" if bf16 else ""}zero_pp_rank_{r}_mp_rank_00_optim_states.pt')


def rewrite(path, fn):
    obj = torch.load(path)
    fn(obj)
    torch.save(obj, path)


# 1: latest names a missing tag
d = folder('c01-latest-missing')
write_zero12(d, small(), 2)
with open(os.path.join(d, 'latest'), 'w') as f:
    f.write('global_step9\n')
case('c01-latest-missing', d, ok=False, error=err(72, f'latest names global_step9, but {d} has no folder global_step9'))

# 2: no latest: the tag folder with the largest number, a warning
d = folder('c02-no-latest')
write_zero12(d, small(), 2, tag='global_step1')
vals = write_zero12(d, small(), 2, tag='global_step10')
os.remove(os.path.join(d, 'latest'))
case('c02-no-latest', d, vals, kind='ZeRO-2', W=2,
     warnings=[P + f"{d} has no latest file: DeepSpeed's load_checkpoint() without a tag loads nothing; reading "
               'global_step10'])

# 3: bf16_ and plain files in one tag
d = folder('c03-mixed-bf16-current')
write_zero12(d, small(), 2)
vals = write_zero12(d, small(3), 2, bf16=True)
case('c03-mixed-bf16-current', d, vals, kind='ZeRO-2', W=2,
     warnings=[P + f'{tagdir(d)} holds both bf16_zero_pp_rank_* and zero_pp_rank_* files; the model states say bf16 is '
               'on, so the zero_pp_rank_* files are stale'])
d = folder('c03-mixed-plain-current')
write_zero12(d, small(3), 2, bf16=True)
vals = write_zero12(d, small(), 2)
case('c03-mixed-plain-current', d, vals, kind='ZeRO-2', W=2,
     warnings=[P + f'{tagdir(d)} holds both bf16_zero_pp_rank_* and zero_pp_rank_* files; the model states say bf16 is '
               'off, so the bf16_zero_pp_rank_* files are stale'])
d = folder('c03-mixed-unsaid')
write_zero12(d, small(), 2, bf16=True)
write_zero12(d, small(), 2, config={'zero_optimization': {'stage': 2}})
case('c03-mixed-unsaid', d, ok=False,
     error=err(72, f'{tagdir(d)} holds both bf16_zero_pp_rank_* and zero_pp_rank_* files, and the model states do not '
                   'say which save is current'))

# 4: no model states
d = folder('c04-no-model-states')
write_zero12(d, small(), 2)
os.remove(os.path.join(tagdir(d), 'mp_rank_00_model_states.pt'))
case('c04-no-model-states', d, ok=False, kind='ZeRO-2', W=2,
     error=err(72, f'{tagdir(d)} has no mp_rank_00_model_states.pt: it holds the parameter names and shapes'))
d = folder('c04-no-model-states-zero3')
write_zero3(d, small(), 2)
os.remove(os.path.join(tagdir(d), 'zero_pp_rank_0_mp_rank_00_model_states.pt'))
case('c04-no-model-states-zero3', d, ok=False, kind='ZeRO-3', W=2,
     error=err(72, f'{tagdir(d)} has no zero_pp_rank_0_mp_rank_00_model_states.pt: it holds the parameter names and '
                   'shapes'))

# 5: missing ranks
d = folder('c05-missing-rank')
write_zero12(d, small(), 3)
os.remove(optim(d, 1))
case('c05-missing-rank', d, ok=False, kind='ZeRO-2', W=3,
     error=err(72, 'rank 1 of 3 is missing: no zero_pp_rank_1_mp_rank_00_optim_states.pt'))
d = folder('c05-missing-ranks-zero3')
write_zero3(d, small(), 4)
os.remove(optim(d, 2))
os.remove(os.path.join(tagdir(d), 'zero_pp_rank_3_mp_rank_00_model_states.pt'))
case('c05-missing-ranks-zero3', d, ok=False, kind='ZeRO-3', W=4,
     error=err(72, 'rank 2 of 4 is missing: no zero_pp_rank_2_mp_rank_00_optim_states.pt'),
     failures=[err(72, 'rank 2 of 4 is missing: no zero_pp_rank_2_mp_rank_00_optim_states.pt'),
               err(72, 'rank 3 of 4 is missing: no zero_pp_rank_3_mp_rank_00_model_states.pt')])
d = folder('c05-missing-rank-bf16')
write_zero12(d, small(), 2, bf16=True)
os.remove(optim(d, 1, bf16=True))
case('c05-missing-rank-bf16', d, ok=False, kind='ZeRO-2', W=2,
     error=err(72, 'rank 1 of 2 is missing: no bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt'))

# 6: a stale rank from an earlier save with more ranks
d = folder('c06-stale-rank')
write_zero12(d, small(), 3, tag='global_step2')
shutil.move(optim(d, 2), os.path.join(OUT, 'stale.pt'))
shutil.rmtree(tagdir(d))
vals = write_zero12(d, small(), 2)
shutil.move(os.path.join(OUT, 'stale.pt'), optim(d, 2))
case('c06-stale-rank', d, vals, kind='ZeRO-2', W=2,
     warnings=[P + 'zero_pp_rank_2_mp_rank_00_optim_states.pt is rank 2, but the checkpoint has 2 partitions: a stale '
               'file from an earlier save (zero_to_fp32 counts it and fails)'])

# 7: required keys and their types
d = folder('c07-no-key')
write_zero12(d, small(), 2)
rewrite(optim(d, 1), lambda o: o['optimizer_state_dict'].pop('single_partition_of_fp32_groups'))
case('c07-no-key', d, ok=False, kind='ZeRO-2', W=2,
     error=err(73, 'zero_pp_rank_1_mp_rank_00_optim_states.pt: no optimizer_state_dict.single_partition_of_fp32_groups'))
d = folder('c07-wrong-type')
write_zero12(d, small(), 2)
rewrite(os.path.join(tagdir(d), 'mp_rank_00_model_states.pt'), lambda o: o.update(buffer_names='scale'))
case('c07-wrong-type', d, ok=False, kind='ZeRO-2', W=2,
     error=err(73, 'mp_rank_00_model_states.pt: buffer_names is a str, expected a list of str'))

# a partition cut short: its own container's error (section 10), the file named in the hint
d = folder('c07-cut')
write_zero12(d, small(), 2)
with open(optim(d, 1), 'r+b') as f:
    f.truncate(1000)
case('c07-cut', d, ok=False, kind='ZeRO-2', W=2,
     error={'code': 51, 'message': 'zip: no end-of-central-directory record in the last 1000 bytes of the file'})
cases[-1]['hint'] = 'the file is zero_pp_rank_1_mp_rank_00_optim_states.pt'

# 8, 9, 10, 11: files of different saves
d = folder('c08-versions')
write_zero12(d, small(), 2)
rewrite(optim(d, 1), lambda o: o.update(ds_version='0.13.1'))
case('c08-versions', d, ok=False, kind='ZeRO-2', W=2,
     error=err(74, 'zero_pp_rank_1_mp_rank_00_optim_states.pt was saved by DeepSpeed 0.13.1, '
                   'zero_pp_rank_0_mp_rank_00_optim_states.pt by 0.14.4'))
d = folder('c09-kinds')
write_zero12(d, small(), 2)
rewrite(optim(d, 1), lambda o: o['optimizer_state_dict'].update(zero_stage=ZeroStageEnum.optimizer_states))
case('c09-kinds', d, ok=False, kind='ZeRO-2', W=2,
     error=err(74, 'zero_pp_rank_1_mp_rank_00_optim_states.pt is ZeRO-1, zero_pp_rank_0_mp_rank_00_optim_states.pt is '
                   'ZeRO-2'))
d = folder('c11-world-size')
write_zero12(d, small(), 2)
rewrite(os.path.join(tagdir(d), 'mp_rank_00_model_states.pt'), lambda o: o.update(dp_world_size=4))
case('c11-world-size', d, ok=False, kind='ZeRO-2', W=2,
     error=err(74, 'the model states say dp_world_size 4, the optimizer files partition_count 2'))

# 12: pipeline, MoE and tensor parallelism
d = folder('c12-moe')
vals = write_zero12(d, small(), 2)
shutil.copy(os.path.join(tagdir(d), 'mp_rank_00_model_states.pt'),
            os.path.join(tagdir(d), 'layer_0_expert_0_mp_rank_00_model_states.pt'))
case('c12-moe', d, ok=False, kind='ZeRO-2', W=2,
     error=err(75, 'layer_0_expert_0_mp_rank_00_model_states.pt: pipeline-parallel, expert (MoE) and tensor-parallel '
                   'checkpoints are not supported'))

# 13: groups against param_shapes
d = folder('c13-groups')
write_zero12(d, two_groups(), 2)
rewrite(os.path.join(tagdir(d), 'mp_rank_00_model_states.pt'), lambda o: o['param_shapes'].pop())
case('c13-groups', d, ok=False, kind='ZeRO-2', W=2,
     error=err(74, 'zero_pp_rank_0_mp_rank_00_optim_states.pt has 2 parameter groups, param_shapes has 1'),
     failures=[err(74, 'zero_pp_rank_0_mp_rank_00_optim_states.pt has 2 parameter groups, param_shapes has 1'),
               err(74, 'zero_pp_rank_1_mp_rank_00_optim_states.pt has 2 parameter groups, param_shapes has 1')])

# 14: a group's configuration differs across ranks
d = folder('c14-config')
write_zero12(d, small(), 2)
rewrite(optim(d, 1), lambda o: o['optimizer_state_dict']['base_optimizer_state']['param_groups'][0].update(lr=0.02))
case('c14-config', d, ok=False, kind='ZeRO-2', W=2,
     error=err(74, "zero_pp_rank_1_mp_rank_00_optim_states.pt: group 0's lr is 0.02, rank 0's is 0.01"))

# 15: a moment's length
d = folder('c15-length')
write_zero12(d, small(), 2)   # 163 elements, padded to 2 x 82 (pad 1)


def shorter(o):
    st = o['optimizer_state_dict']['base_optimizer_state']['state'][0]
    st['exp_avg'] = st['exp_avg'][:70].clone()


rewrite(optim(d, 0), shorter)
case('c15-length', d, ok=False, kind='ZeRO-2', W=2,
     error=err(76, "group 0: rank 0's exp_avg holds 70 elements; its parameters need 163, padded to 2 \u00d7 82"))
d = folder('c15-master-uncut')
write_zero12(d, small(), 2)


def uncut(o):
    osd = o['optimizer_state_dict']
    t = osd['single_partition_of_fp32_groups'][0]
    osd['single_partition_of_fp32_groups'][0] = torch.cat([t, torch.zeros(3)])


rewrite(optim(d, 1), uncut)
case('c15-master-uncut', d, ok=False, kind='ZeRO-2', W=2,
     error=err(76, "group 0: rank 1's single_partition_of_fp32_groups holds 84 elements; its parameters need 163, "
                   "padded to 2 \u00d7 82"))

# 16: the padding recorded
d = folder('c16-padding')
write_zero12(d, small(), 2)
rewrite(optim(d, 1), lambda o: o['optimizer_state_dict'].update(group_paddings=[2]))
case('c16-padding', d, ok=False, kind='ZeRO-2', W=2,
     error=err(76, 'group 0: rank 1 records padding 2, expected 1'))

# 17: ZeRO-3 partitions
d = folder('c17-zero3-length')
write_zero3(d, small(), 2)


def z3short(o):
    st = o['optimizer_state_dict']['optimizer_state_dict']['state'][0]
    st['exp_avg_sq'] = st['exp_avg_sq'][:10].clone()


rewrite(optim(d, 1), z3short)
case('c17-zero3-length', d, ok=False, kind='ZeRO-3', W=2,
     error=err(76, "sub-group 0: rank 1's exp_avg_sq holds 10 elements; its parameters' partitions need 82"))

# 18: a flat tensor that is not flat
d = folder('c18-not-flat')
write_zero12(d, small(), 2)
rewrite(optim(d, 0), lambda o: o['optimizer_state_dict'].update(
    single_partition_of_fp32_groups=[o['optimizer_state_dict']['single_partition_of_fp32_groups'][0].view(2, 41)]))
case('c18-not-flat', d, ok=False, kind='ZeRO-2', W=2,
     error=err(76, 'zero_pp_rank_0_mp_rank_00_optim_states.pt: optimizer_state_dict.single_partition_of_fp32_groups[0] '
                   'is not a flat tensor (#[2, 41], stride (41, 1))'))

# 19: param_slice_mappings that disagree with the walk (a warning)
d = folder('c19-mappings')
vals = write_zero12(d, small(), 2)
rewrite(optim(d, 1), lambda o: o['optimizer_state_dict']['param_slice_mappings'][0].update(
    {'l2.bias': fragment_address(numel=6, start=60)}))
case('c19-mappings', d, vals, kind='ZeRO-2', W=2,
     warnings=[P + 'rank 1 group 0: param_slice_mappings give l2.bias start 60 numel 6, the param_shapes walk start 75 '
               'numel 6'])

# 20: steps across ranks
d = folder('c20-steps')
write_zero12(d, small(), 2)
rewrite(optim(d, 1), lambda o: o['optimizer_state_dict']['base_optimizer_state']['state'][0].update(
    step=torch.tensor(3.0)))
case('c20-steps', d, ok=False, kind='ZeRO-2', W=2, error=err(77, 'group 0: step 3 on rank 1, 2 on rank 0'))
d = folder('c20-steps-zero3')
write_zero3(d, two_groups(), 2)
rewrite(optim(d, 1), lambda o: o['optimizer_state_dict']['optimizer_state_dict']['state'][1].update(
    step=torch.tensor(1.0)))
case('c20-steps-zero3', d, ok=False, kind='ZeRO-3', W=2, error=err(77, 'sub-group 1: step 1 on rank 1, 2 on rank 0'))

# 21, 22: steps across groups, against the engine (warnings)
d = folder('c21-group-steps')
vals = write_zero12(d, two_groups(), 2)
for r in range(2):
    rewrite(optim(d, r), lambda o: o['optimizer_state_dict']['base_optimizer_state']['state'][1].update(
        step=torch.tensor(1.0)))
for n in ('a.bias', 'b.bias'):
    vals[n]['step'] = 1.0
case('c21-group-steps', d, vals, kind='ZeRO-2', W=2, warnings=[P + 'group 1 is at step 1, group 0 at step 2'])
d = folder('c22-engine-steps')
vals = write_zero12(d, small(), 2)
rewrite(os.path.join(tagdir(d), 'mp_rank_00_model_states.pt'), lambda o: o.update(global_steps=7, skipped_steps=1))
case('c22-engine-steps', d, vals, kind='ZeRO-2', W=2,
     warnings=[P + 'the optimizer is at step 2, the engine at 6 (global_steps 7 \u2212 skipped_steps 1): the optimizer '
               'was restarted, or the files come from different saves'])

# 23, 24, 25: names and shapes
d = folder('c23-unknown-name')
write_zero12(d, small(), 2)
rewrite(os.path.join(tagdir(d), 'mp_rank_00_model_states.pt'), lambda o: o['module'].pop('l2.bias'))
case('c23-unknown-name', d, ok=False, kind='ZeRO-2', W=2,
     error=err(78, 'param_shapes names l2.bias, which the module does not save'))
d = folder('c25-shape')


def reshape(o):
    ps = o['param_shapes'][0]
    o['param_shapes'][0] = collections.OrderedDict(
        (n, torch.Size([6, 7]) if n == 'l1.weight' else s) for n, s in ps.items())


write_zero12(d, small(), 2)
rewrite(os.path.join(tagdir(d), 'mp_rank_00_model_states.pt'), reshape)
case('c25-shape', d, ok=False, kind='ZeRO-2', W=2,
     error=err(78, 'l1.weight: param_shapes says #[6, 7], the module saves #[7, 6]'))

# 26, 27: ZeRO-3 frozen parameters
d = folder('c26-no-shape')
write_zero3(d, small(), 2)
rewrite(os.path.join(tagdir(d), 'zero_pp_rank_0_mp_rank_00_model_states.pt'),
        lambda o: o['frozen_param_shapes'].pop('frozen.weight'))
case('c26-no-shape', d, ok=False, kind='ZeRO-3', W=2,
     error=err(78, 'frozen.weight: no shape saved (neither param_shapes nor frozen_param_shapes names it)'))
d = folder('c27-frozen-fragment')
write_zero3(d, small(), 2)
rewrite(os.path.join(tagdir(d), 'zero_pp_rank_1_mp_rank_00_model_states.pt'),
        lambda o: o['frozen_param_fragments'].update({'frozen.weight': torch.zeros(7)}))
case('c27-frozen-fragment', d, ok=False, kind='ZeRO-3', W=2,
     error=err(78, "frozen parameter frozen.weight: rank 1's fragment holds 7 elements, expected 8"))

# 28: shared_params
d = folder('c28-tie-apart')
write_zero12(d, small(), 2)


def untie(o):
    o['module']['head.weight'] = o['module']['head.weight'].clone()


rewrite(os.path.join(tagdir(d), 'mp_rank_00_model_states.pt'), untie)
case('c28-tie-apart', d, ok=False, kind='ZeRO-2', W=2,
     error=err(78, 'shared_params ties head.weight to emb.weight, but the module saves them apart'))
d = folder('c28-tie-missing')
write_zero12(d, small(), 2)
rewrite(os.path.join(tagdir(d), 'mp_rank_00_model_states.pt'),
        lambda o: o.update(shared_params={'head.weight': 'embed.weight'}))
case('c28-tie-missing', d, ok=False, kind='ZeRO-2', W=2,
     error=err(78, 'shared_params ties head.weight to embed.weight, but embed.weight is not in the module'))

# 10: partition_count
d = folder('c10-partition-count')
write_zero12(d, small(), 2)
rewrite(optim(d, 1), lambda o: o['optimizer_state_dict'].update(partition_count=[3]))
case('c10-partition-count', d, ok=False, kind='ZeRO-2', W=2,
     error=err(74, 'zero_pp_rank_1_mp_rank_00_optim_states.pt has partition_count 3, '
                   'zero_pp_rank_0_mp_rank_00_optim_states.pt has 2'))

# a partition_count past any world size (memory is not sized by it)
d = folder('c10-huge-partition-count')
write_zero12(d, small(), 2)
rewrite(optim(d, 0), lambda o: o['optimizer_state_dict'].update(partition_count=[5000000]))
case('c10-huge-partition-count', d, ok=False, kind='ZeRO-2', W=2,
     error=err(73, 'zero_pp_rank_0_mp_rank_00_optim_states.pt: optimizer_state_dict.partition_count is a list, '
                   'expected a world size of at most 1048576'))

d = folder('c12-moe-world-sizes')
write_zero12(d, two_groups(), 2)
rewrite(optim(d, 0), lambda o: o['optimizer_state_dict'].update(partition_count=[2, 4]))
case('c12-moe-world-sizes', d, ok=False, kind='ZeRO-2', W=2,
     error=err(75, 'parameter groups partitioned over different world sizes ([2, 4]): expert (MoE) groups are not '
                   'supported'))

# 24: a name in two groups (group 1 is then longer than its partitions)
d = folder('c24-twice')
write_zero12(d, two_groups(), 2)


def twice(o):
    o['param_shapes'][1] = collections.OrderedDict([('a.bias', torch.Size([5])), ('b.bias', torch.Size([1])),
                                                    ('b.weight', torch.Size([4, 5]))])


rewrite(os.path.join(tagdir(d), 'mp_rank_00_model_states.pt'), twice)
# the layout's checks (11.5.15) come before the names' (24), group by group, rank by rank, key by key
over = [err(76, f"group 1: rank {r}'s {k} holds {n} elements; its parameters need 26, padded to 2 \u00d7 14")
        for r in (0, 1) for k, n in (('exp_avg', 4), ('exp_avg_sq', 4), ('single_partition_of_fp32_groups', 4 - 2 * r))]
case('c24-twice', d, ok=False, kind='ZeRO-2', W=2, error=over[0],
     failures=over + [err(78, 'param_shapes names b.weight twice')])

# 28: shared_params' other reasons
for label, ties, reason in (
        ('follows', {'emb.weight': 'head.weight'}, 'head.weight follows it'),
        ('chain', {'head.weight': 'l2.weight', 'l2.weight': 'l1.weight'},
         'l2.weight is itself tied to l1.weight'),
        ('in-param-shapes', {'l1.bias': 'emb.weight'}, 'l1.bias is in param_shapes too'),
        ('shapes', {'head.weight': 'l1.weight'}, 'their shapes differ (#[11, 6] and #[7, 6])')):
    d = folder(f'c28-tie-{label}')
    write_zero12(d, small(), 2)
    rewrite(os.path.join(tagdir(d), 'mp_rank_00_model_states.pt'), lambda o, t=ties: o.update(shared_params=t))
    alias, owner = next(iter(ties.items()))
    case(f'c28-tie-{label}', d, ok=False, kind='ZeRO-2', W=2,
         error=err(78, f'shared_params ties {alias} to {owner}, but {reason}'),
         failures=[err(78, f'shared_params ties {alias} to {owner}, but {reason}')] + (
             [err(78, 'shared_params ties l2.weight to l1.weight, but l2.weight is in param_shapes too')]
             if label == 'chain' else []))

# 29: NaN and negative second moments (section 5's warnings, with statistics)
d = folder('c29-nan')
m = small()
m.m['l1.bias'][2] = float('nan')
m.v['l2.bias'][0] = -1e-9
vals = write_zero12(d, m, 2)
case('c29-nan', d, vals, kind='ZeRO-2', W=2,
     warnings=[P + 'parameter 2: m holds 1 NaN and 0 infinite values',
               P + 'parameter 4: v holds 1 negative value (a second moment is never negative)'])
cases[-1]['statsWarnings'] = True

# 30: the module's weights against the masters rounded to its dtype
d = folder('c30-module-not-rounded')
vals = write_zero12(d, small(), 2, bf16=True)


def nudge(o):
    w = o['module']['l2.weight']
    w.view(-1)[5] += 1.0


rewrite(os.path.join(tagdir(d), 'mp_rank_00_model_states.pt'), nudge)
case('c30-module-not-rounded', d, vals, kind='ZeRO-2', W=2,
     warnings=[P + "l2.weight: the module's weights are not the master weights rounded to bfloat16 (first at element "
               '5)'])
cases[-1]['statsWarnings'] = True
# the same past the first fragment: l1.weight's elements 24 to 41 are rank 1's
d = folder('c30-module-not-rounded-rank1')
vals = write_zero12(d, small(), 2, bf16=True)


def nudge30(o):
    o['module']['l1.weight'].view(-1)[30] += 1.0


rewrite(os.path.join(tagdir(d), 'mp_rank_00_model_states.pt'), nudge30)
case('c30-module-not-rounded-rank1', d, vals, kind='ZeRO-2', W=2,
     warnings=[P + "l1.weight: the module's weights are not the master weights rounded to bfloat16 (first at element "
               '30)'])
cases[-1]['statsWarnings'] = True
d = folder('w-zero2-w2-fp16')
case('w-zero2-w2-fp16', d, write_zero12(d, two_groups(7), 2, fp16=True), kind='ZeRO-2', W=2)

# 31: ZeRO-1/2's load asserts optimizer_state_dict's ds_version (absent counts as empty)
d = folder('c31-no-version')
vals = write_zero12(d, small(), 2)
rewrite(optim(d, 1), lambda o: o['optimizer_state_dict'].pop('ds_version'))
case('c31-no-version', d, vals, kind='ZeRO-2', W=2,
     warnings=[P + "zero_pp_rank_1_mp_rank_00_optim_states.pt: empty ds_version: DeepSpeed's load refuses it"])

# 31: ZeRO-1 below 0.3.17
d = folder('c31-old-zero1')
vals = write_zero12(d, small(), 2, stage=1, version='0.3.16')
case('c31-old-zero1', d, vals, kind='ZeRO-1', W=2,
     warnings=[P + "ds_version 0.3.16 is below 0.3.17: DeepSpeed's ZeRO-1 load refuses it"])

# 32: an elastic checkpoint
d = folder('c32-elastic')
vals = write_zero12(d, two_groups(), 3, elastic=True)
case('c32-elastic', d, vals, kind='ZeRO-2', W=3,
     warnings=[P + 'an elastic checkpoint keeps no param_groups: lr, betas, eps and weight decay are not in the file'])
cases[-1]['noConfig'] = True

# 33: a group saved before its first step
d = folder('c33-no-state')
write_zero12(d, two_groups(), 2)
for r in range(2):
    rewrite(optim(d, r), lambda o: o['optimizer_state_dict']['base_optimizer_state']['state'].pop(1))
case('c33-no-state', d, kind='ZeRO-2', W=2,
     warnings=[P + 'group 1 has no optimizer state: saved before the first step'])

# 31: ds_version
d = folder('c31-empty-version')
vals = write_zero12(d, small(), 2, version='')
case('c31-empty-version', d, vals, kind='ZeRO-2', W=2,
     warnings=[P + f"zero_pp_rank_{r}_mp_rank_00_optim_states.pt: empty ds_version: DeepSpeed's load refuses it"
               for r in range(2)])

# a Hugging Face Trainer's checkpoint-N/ saved with DeepSpeed: a save_dir beside the Trainer's files
hf = os.path.join(OUT, 'folders', 'hf-output', 'checkpoint-2')
shutil.copytree(os.path.join(FIXTURES, 'zero2-w2'), hf)
for name, text in (('trainer_state.json', '{"global_step": 2, "log_history": []}'), ('zero_to_fp32.py', '# recovery\n'),
                   ('config.json', '{}')):
    with open(os.path.join(hf, name), 'w') as f:
        f.write(text)
torch.save({'a': 1}, os.path.join(hf, 'rng_state_0.pth'))
real = next(c for c in cases if c['name'] == 'zero2-w2')
cases.append({**real, 'name': 'hf-checkpoint-2', 'dir': hf, 'real': False})


# ---- pairing with the model the user will load into (format.md 11.6) ----
pairings = []


def twins(seed=3):
    """two same-shaped blocks between an embedding and its tied head: one group"""
    return Model([('emb.weight', (10, 4)), ('blocks.0.weight', (4, 4)), ('blocks.0.bias', (4,)),
                  ('blocks.1.weight', (4, 4)), ('blocks.1.bias', (4,))],
                 [['emb.weight', 'blocks.0.weight', 'blocks.0.bias', 'blocks.1.weight', 'blocks.1.bias']],
                 ties=[('head.weight', 'emb.weight')], buffers=[('scale', (1,))], seed=seed)


def new_state(model, path, order=None, shapes=(), untie=(), tie=(), drop=(), extra=()):
    """the new model's torch.save state dict: the checkpoint's module (model.order) in `order`,
    some names resized, untied (alias -> its own tensor), newly tied (alias -> owner), dropped or
    added"""
    shapes, tie = dict(shapes), dict(tie)
    names = [n for n in (order or [n for n, _ in model.order]) if n not in drop] + [n for n, _ in extra]
    extra = dict(extra)
    sd = collections.OrderedDict()
    made = {}
    for n in names:
        owner = model.ties.get(n) if n not in untie else None
        owner = tie.get(n, owner)
        if owner is not None and owner in made:
            sd[n] = made[owner]
            continue
        base = model.ties.get(n, n)
        shape = shapes.get(n, shapes.get(base, extra.get(n, model.shapes.get(base))))
        made[n] = sd[n] = torch.zeros(shape)
    torch.save(sd, path)
    return names


def new_names(names, path):
    with open(path, 'w') as f:
        json.dump(names, f)


def new_safetensors(model, path, drop=()):
    """model.safetensors as transformers saves it: sorted names, the tied copy (an alias) dropped"""
    header, data = {}, b''
    for n, kind in sorted(model.order):
        if kind == 'alias' or n in drop:
            continue
        t = torch.zeros(model.shapes[n])
        b = t.numpy().tobytes()
        header[n] = {'dtype': 'F32', 'shape': list(t.shape), 'data_offsets': [len(data), len(data) + len(b)]}
        data += b
    h = json.dumps(header).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + data)


def pairing(name, d, model_file=None, names_file=None, world_size=None, failures=(), warnings=(), note=None):
    pairings.append({'name': name, 'dir': tagdir(d), 'model': model_file, 'names': names_file,
                     'worldSize': world_size, 'pairs': not failures, 'failures': list(failures),
                     'warnings': list(warnings), 'note': note})


PASS = P + 'the new model pairs with this checkpoint as DeepSpeed pairs it: same '
REPAIR = (P + 'only the order or the world size differs: a universal checkpoint (ds_to_universal) loads by name on any '
          'world size, without retraining')
FAILED = P + 'compared with the new model as DeepSpeed pairs it: '
for stage, write in ((2, lambda d, m, W: write_zero12(d, m, W)), (3, lambda d, m, W: write_zero3(d, m, W))):
    d = folder(f'pair-zero{stage}')
    write(d, twins(), 2)
    pd = os.path.join(OUT, 'pair', f'zero{stage}')
    os.makedirs(pd)
    f = lambda n: os.path.join(pd, n)
    m = twins()
    new_names(new_state(m, f('same.pt')), f('same.json'))
    pairing(f'zero{stage}-same', d, f('same.pt'), note=PASS + 'names, shapes, ties and order in every group')
    pairing(f'zero{stage}-same-names', d, names_file=f('same.json'), note=PASS + 'names and order in every group')
    pairing(f'zero{stage}-same-world', d, f('same.pt'), world_size=2,
            note=PASS + 'names, shapes, ties and order in every group')
    new_safetensors(m, f('model.safetensors'))
    pairing(f'zero{stage}-safetensors', d, f('model.safetensors'), note=PASS + 'names and shapes',
            warnings=[P + 'model.safetensors keeps no module order: the order DeepSpeed pairs by is not checked (give '
                      '--names NAMES.json or a torch.save state dict)'])
    pairing(f'zero{stage}-safetensors-names', d, f('model.safetensors'), f('same.json'),
            note=PASS + 'names, shapes and order in every group')
    swapped = ['emb.weight', 'blocks.1.weight', 'blocks.1.bias', 'blocks.0.weight', 'blocks.0.bias', 'scale',
               'head.weight']
    new_names(new_state(m, f('reordered.pt'), order=swapped), f('reordered.json'))
    reorder = err(82, 'group 0 position 1: DeepSpeed would load blocks.0.weight\'s moments and master weights into '
                      'blocks.1.weight')
    pairing(f'zero{stage}-reordered', d, f('reordered.pt'), failures=[reorder],
            note=REPAIR if stage != 3 else FAILED + 'names, shapes, ties and order in every group')
    pairing(f'zero{stage}-reordered-names', d, names_file=f('reordered.json'), failures=[reorder],
            note=REPAIR if stage != 3 else FAILED + 'names and order in every group')
    world = err(83, 'the checkpoint has 2 partitions; DeepSpeed refuses to load it on 4')
    pairing(f'zero{stage}-world', d, f('same.pt'), world_size=4, failures=[world],
            note=REPAIR if stage != 3 else FAILED + 'names, shapes, ties and order in every group')
    pairing(f'zero{stage}-reordered-world', d, f('reordered.pt'), world_size=3,
            failures=[reorder, err(83, 'the checkpoint has 2 partitions; DeepSpeed refuses to load it on 3')],
            note=REPAIR if stage != 3 else FAILED + 'names, shapes, ties and order in every group')
    new_state(m, f('resized.pt'), shapes=[('emb.weight', (12, 4))])
    pairing(f'zero{stage}-resized', d, f('resized.pt'),
            failures=[err(81, 'emb.weight is #[10, 4] in the checkpoint, #[12, 4] in the new model'),
                      err(81, 'head.weight is #[10, 4] in the checkpoint, #[12, 4] in the new model')],
            note=FAILED + 'names, shapes, ties and order in every group')
    new_state(m, f('untied.pt'), untie=['head.weight'])
    pairing(f'zero{stage}-untied', d, f('untied.pt'),
            failures=[err(81, 'head.weight is tied to emb.weight in the checkpoint, not in the new model')],
            note=FAILED + 'names, shapes, ties and order in every group')
    new_state(m, f('tied.pt'), tie=[('blocks.1.weight', 'blocks.0.weight')])
    pairing(f'zero{stage}-tied', d, f('tied.pt'),
            failures=[err(81, 'blocks.1.weight is tied to blocks.0.weight in the new model, not in the checkpoint')],
            note=FAILED + 'names, shapes, ties and order in every group')
    new_state(m, f('renamed.pt'), drop=['scale', 'blocks.1.bias'], extra=[('blocks.2.bias', (4,))])
    pairing(f'zero{stage}-renamed', d, f('renamed.pt'),
            failures=[err(81, 'blocks.1.bias is in the checkpoint, not in the new model'),
                      err(81, 'scale is in the checkpoint, not in the new model'),
                      err(81, 'blocks.2.bias is in the new model, not in the checkpoint')],
            note=FAILED + 'names, shapes, ties and order in every group')


# the new model as torch writes it: an nn.Module's state_dict() (its buffer first, its own; the
# head tied to the embedding by assignment, one storage)


class Net(torch.nn.Module):
    def __init__(self, order=('0', '1'), vocab=10, tied=True):
        super().__init__()
        self.register_buffer('scale', torch.ones(1))
        self.emb = torch.nn.Embedding(vocab, 4)
        self.blocks = torch.nn.Sequential(collections.OrderedDict((k, torch.nn.Linear(4, 4)) for k in order))
        self.head = torch.nn.Linear(4, vocab, bias=False)
        if tied:
            self.head.weight = self.emb.weight


d = folder('pair-torch')
write_zero12(d, twins(), 2)
pd = os.path.join(OUT, 'pair', 'torch')
os.makedirs(pd)
for label, net in (('net', Net()), ('net-swapped', Net(order=('1', '0'))), ('net-resized', Net(vocab=12)),
                   ('net-untied', Net(tied=False))):
    torch.save(net.state_dict(), os.path.join(pd, f'{label}.pt'))
    with open(os.path.join(pd, f'{label}.json'), 'w') as f:
        json.dump(list(net.state_dict()), f)
f = lambda n: os.path.join(pd, n)
pairing('torch-net', d, f('net.pt'), world_size=2, note=PASS + 'names, shapes, ties and order in every group')
pairing('torch-net-names', d, names_file=f('net.json'), note=PASS + 'names and order in every group')
pairing('torch-net-swapped', d, f('net-swapped.pt'), failures=[reorder], note=REPAIR)
pairing('torch-net-resized', d, f('net-resized.pt'),
        failures=[err(81, 'emb.weight is #[10, 4] in the checkpoint, #[12, 4] in the new model'),
                  err(81, 'head.weight is #[10, 4] in the checkpoint, #[12, 4] in the new model')],
        note=FAILED + 'names, shapes, ties and order in every group')
pairing('torch-net-untied', d, f('net-untied.pt'),
        failures=[err(81, 'head.weight is tied to emb.weight in the checkpoint, not in the new model')],
        note=FAILED + 'names, shapes, ties and order in every group')

# two groups (ZeRO-3 cut in sub-groups), and a frozen parameter: the order is per group
for label, write in (('zero2', lambda d, m: write_zero12(d, m, 3)),
                     ('zero3-subgroups', lambda d, m: write_zero3(d, m, 3, sub_group_size=4))):
    d = folder(f'pair-groups-{label}')
    write(d, two_groups())
    pd = os.path.join(OUT, 'pair', f'groups-{label}')
    os.makedirs(pd)
    f = lambda n: os.path.join(pd, n)
    m = two_groups()
    new_state(m, f('same.pt'))
    pairing(f'groups-{label}-same', d, f('same.pt'), world_size=3,
            note=PASS + 'names, shapes, ties and order in every group')
    new_names(new_state(m, f('moved.pt'), order=['b.weight', 'b.bias', 'a.weight', 'a.bias']), f('moved.json'))
    moved = [err(82, "group 0 position 0: DeepSpeed would load a.weight's moments and master weights into b.weight"),
             err(82, "group 1 position 0: DeepSpeed would load a.bias's moments and master weights into b.bias")]
    pairing(f'groups-{label}-moved', d, f('moved.pt'), failures=moved,
            note=REPAIR if label == 'zero2' else FAILED + 'names, shapes, ties and order in every group')
    pairing(f'groups-{label}-moved-names', d, names_file=f('moved.json'), failures=moved,
            note=REPAIR if label == 'zero2' else FAILED + 'names and order in every group')
for stage, write in ((1, lambda d, m: write_zero12(d, m, 2, stage=1)), (2, lambda d, m: write_zero12(d, m, 2)),
                     (3, lambda d, m: write_zero3(d, m, 2))):
    d = folder(f'pair-frozen-zero{stage}')
    write(d, small())
    pd = os.path.join(OUT, 'pair', f'frozen-zero{stage}')
    os.makedirs(pd)
    f = lambda n: os.path.join(pd, n)
    new_state(small(), f('same.pt'))
    pairing(f'frozen-zero{stage}-same', d, f('same.pt'), note=PASS + 'names, shapes, ties and order in every group')
    new_state(small(), f('frozen-resized.pt'), shapes=[('frozen.weight', (3, 6))])
    pairing(f'frozen-zero{stage}-resized', d, f('frozen-resized.pt'),
            failures=[err(81, 'frozen.weight is #[3, 5] in the checkpoint, #[3, 6] in the new model')],
            note=FAILED + 'names, shapes, ties and order in every group')

# ---- universal checkpoints (format.md 11.7), as ds_to_universal writes them (tp 1, no patterns) ----

def to_universal(src_tag, out, utag='global_step2'):
    """ds_to_universal.py --input_folder src_tag --output_folder out/utag, read as it reads: rank r's
    param_slice_mappings, its flat moments and masters; optimizer_state.pt rank 0's optimizer state
    without the sharded keys, group_paddings zeros, partition_count [W] * G, param_groups last"""
    fs = sorted(os.listdir(src_tag))
    optim = sorted([f for f in fs if f.endswith('optim_states.pt')],
                   key=lambda f: int(f.split('zero_pp_rank_')[1].split('_')[0]))
    osd = [torch.load(os.path.join(src_tag, f))['optimizer_state_dict'] for f in optim]
    m0 = torch.load(os.path.join(src_tag, 'mp_rank_00_model_states.pt'))
    ud = os.path.join(out, utag)
    os.makedirs(os.path.join(ud, 'zero'))
    shapes = {k: v for d in m0['param_shapes'] for k, v in d.items()}
    frags = collections.defaultdict(lambda: collections.defaultdict(list))
    steps = {}
    for o in osd:
        state = o['base_optimizer_state']['state']
        for g in range(len(state)):
            flat = {'exp_avg': state[g]['exp_avg'], 'exp_avg_sq': state[g]['exp_avg_sq'],
                    'fp32': o['single_partition_of_fp32_groups'][g]}
            for name, fa in o['param_slice_mappings'][g].items():
                for k, t in flat.items():
                    frags[name][k].append(t.narrow(0, fa.start, fa.numel).clone())
                steps.setdefault(name, state[g]['step'])
    for name, shape in shapes.items():
        pd = os.path.join(ud, 'zero', name)
        os.makedirs(pd)
        torch.save(steps[name], os.path.join(pd, 'step.pt'))
        for k in ('fp32', 'exp_avg', 'exp_avg_sq'):
            torch.save({'cat_dim': 0, 'param': torch.cat(frags[name][k], dim=0).reshape(shape)},
                       os.path.join(pd, f'{k}.pt'))
    sd = {k: v for k, v in osd[0].items()
          if k not in ('base_optimizer_state', 'param_slice_mappings', 'single_partition_of_fp32_groups')}
    if sd.get('group_paddings'):
        sd['group_paddings'] = [0] * len(sd['group_paddings'])
    if sd.get('partition_count'):
        sd['partition_count'] = [len(osd)] * len(sd['partition_count'])
    sd['param_groups'] = osd[0]['base_optimizer_state']['param_groups']
    torch.save(sd, os.path.join(ud, 'zero', 'optimizer_state.pt'))
    shutil.copy2(os.path.join(src_tag, 'mp_rank_00_model_states.pt'), ud)
    with open(os.path.join(out, 'latest_universal'), 'w') as f:
        f.write(utag)
    return ud


def universal_case(name, edit=None, ok=True, error=None, failures=None, warnings=(), values=True, model=None,
                   W=2, write=None):
    src = os.path.join(OUT, 'universal-src', name)
    os.makedirs(src)
    m = model or small(7)
    parts = (write or (lambda d: write_zero12(d, m, W)))(src)
    d = folder(name)
    ud = to_universal(tagdir(src), d)
    if edit:
        edit(ud)
    case(name, d, parts if values and ok else None, ok=ok, kind='ZeRO-2' if ok else None, error=error, failures=failures,
         warnings=warnings, model=m if ok else None)
    cases[-1]['universal'] = True


U = 'universal: '
universal_case('u-zero2-w2')
universal_case('u-zero2-w3-groups', model=two_groups(), W=3)
universal_case('u-zero1-w2', write=lambda d: write_zero12(d, small(7), 2, stage=1))
cases[-1]['kind'] = 'ZeRO-1'
universal_case('u-bf16-optimizer-w2', write=lambda d: write_zero12(d, small(7), 2, bf16=True, bf16_optimizer=True))
cases[-1]['kind'] = 'BF16_Optimizer'
# a client AdamW's groups (decoupled_weight_decay True) carried into optimizer_state.pt: 10.3's rule
universal_case('u-kind-groups-adamw', write=lambda d: write_zero12(d, small(7), 2, decoupled=True))
cases[-1].update(optimizerKind='adamw', kindSaidBy='param_groups')


def bare(ud):
    p = os.path.join(ud, 'zero', 'l1.bias', 'fp32.pt')
    torch.save(torch.load(p)['param'], p)


universal_case('u-bare-tensor', bare, warnings=[P + U + 'zero/l1.bias/fp32.pt is a bare tensor; DeepSpeed\'s '
                                                 'load_universal expects a dict with \'param\''])
universal_case('u-no-optimizer-state', lambda ud: os.remove(os.path.join(ud, 'zero', 'optimizer_state.pt')),
               ok=False, error=err(72, U + 'no zero/optimizer_state.pt'))
universal_case('u-no-step', lambda ud: os.remove(os.path.join(ud, 'zero', 'l1.bias', 'step.pt')),
               ok=False, error=err(72, U + 'l1.bias has no step.pt'))
universal_case('u-no-fp32', lambda ud: shutil.rmtree(os.path.join(ud, 'zero', 'l2.weight')), ok=False,
               failures=[err(72, U + f'l2.weight has no {f}') for f in
                         ('fp32.pt', 'exp_avg.pt', 'exp_avg_sq.pt', 'step.pt')])
cases[-1]['error'] = cases[-1]['failures'][0]


def reshape_u(ud):
    p = os.path.join(ud, 'zero', 'l1.weight', 'exp_avg.pt')
    o = torch.load(p)
    o['param'] = o['param'].reshape(6, 7).clone()
    torch.save(o, p)


universal_case('u-shape', reshape_u, ok=False,
               error=err(78, U + 'zero/l1.weight/exp_avg.pt holds #[6, 7], param_shapes says #[7, 6]'))


def vocab_u(ud):
    for k in ('fp32', 'exp_avg', 'exp_avg_sq'):
        p = os.path.join(ud, 'zero', 'emb.weight', f'{k}.pt')
        o = torch.load(p)
        torch.save({'cat_dim': 0, 'vocab_tensor': True, 'param': o['param'][:9].clone()}, p)


universal_case('u-vocab-tensor', vocab_u, values=False)


def step_u(ud):
    torch.save(torch.tensor(3.0), os.path.join(ud, 'zero', 'l2.bias', 'step.pt'))


universal_case('u-steps', step_u, ok=False, error=err(77, U + 'group 0: l2.bias is at step 3, emb.weight at 2'))


def groups_u(ud):
    p = os.path.join(ud, 'zero', 'optimizer_state.pt')
    o = torch.load(p)
    o['param_groups'].append(dict(o['param_groups'][0]))
    torch.save(o, p)


universal_case('u-param-groups', groups_u, ok=False,
               error=err(74, U + 'optimizer_state.pt has 2 param_groups, param_shapes 1'))


def ghost_u(ud):
    os.makedirs(os.path.join(ud, 'zero', 'ghost.weight'))
    shutil.copy2(os.path.join(ud, 'zero', 'l1.bias', 'fp32.pt'), os.path.join(ud, 'zero', 'ghost.weight', 'fp32.pt'))
    shutil.copy2(os.path.join(ud, 'zero', 'l1.bias', 'step.pt'), os.path.join(ud, 'zero', 'ghost.weight', 'step.pt'))
    shutil.copy2(os.path.join(ud, 'zero', 'l1.bias', 'exp_avg.pt'), os.path.join(ud, 'zero', 'l1.bias', 'extra.pt'))


universal_case('u-unknown-files', ghost_u,
               warnings=[P + U + 'zero/ghost.weight is no parameter of param_shapes',
                         P + U + 'zero/l1.bias/extra.pt is not one of fp32.pt, exp_avg.pt, exp_avg_sq.pt, step.pt'])


def missing_tag(ud):
    with open(os.path.join(os.path.dirname(ud), 'latest_universal'), 'w') as f:
        f.write('global_step9')


universal_case('u-latest-missing', missing_tag, ok=False, values=False)
cases[-1]['error'] = err(72, 'latest_universal names global_step9, but ' + cases[-1]['dir']
                         + ' has no folder global_step9')
cases[-1]['failures'] = [cases[-1]['error']]

# ---- writing a universal checkpoint (format.md 11.7): the source folders and what ds_to_universal
# writes for them (its merge_tp_slices for tp 1, re.match on each name), for test_ds_universal.c
# and universal_check.py ----

import re


def expected_universal(src_tag, out, utag='global_step2'):
    """ds_to_universal's output for tp = 1, with universal_checkpoint_info's patterns"""
    ud = to_universal(src_tag, out, utag)
    info = torch.load(os.path.join(src_tag, 'mp_rank_00_model_states.pt')).get('universal_checkpoint_info') or {}
    rep = info.get('tp_replicated_parameter_patterns', [])
    avg = info.get('parameter_to_average_patterns', [])
    row = info.get('parameter_with_row_parallelism_patterns', [])
    voc = info.get('vocabulary_parameter_patterns', [])
    two = info.get('parameter_with_2_sub_params_cat_dim_0', [])
    sub = [p for s in info.get('parameter_with_sub_params', []) for p in s['patterns']]

    def one(patterns, name):
        m = [p for p in patterns if re.match(p, name)]
        assert len(m) <= 1
        return m[0] if m else None
    for name in os.listdir(os.path.join(ud, 'zero')):
        pd = os.path.join(ud, 'zero', name)
        if not os.path.isdir(pd):
            continue
        assert not any(re.match(p, name) for p in sub)
        for k in ('fp32', 'exp_avg', 'exp_avg_sq'):
            slices = [torch.load(os.path.join(pd, f'{k}.pt'))['param']]
            d = {}
            if one(rep, name):
                param = slices[0]
            elif one(avg, name):
                param = sum(slices) / len(slices)
            elif one(two, name):
                ch = [torch.chunk(x, 2, dim=0) for x in slices]
                param = torch.cat([torch.cat([c[0] for c in ch], dim=0), torch.cat([c[1] for c in ch], dim=0)], dim=0)
                d['cat_dim'] = 0
                d['param_n_sub_params'] = 2
            else:
                cat = 1 if one(row, name) else 0
                param = torch.cat(slices, dim=cat)
                d['cat_dim'] = cat
            if one(voc, name):
                param = param[:info['original_vocab_size'], :]
                d['vocab_tensor'] = True
            d['param'] = param
            torch.save(d, os.path.join(pd, f'{k}.pt'))
    return ud


writes = []


def write_case(name, write, error=None, warnings=(), expect=True):
    src = os.path.join(OUT, 'universal-write', name, 'src')
    os.makedirs(src)
    write(src)
    exp = os.path.join(OUT, 'universal-write', name, 'expected')
    if expect and not error:
        expected_universal(tagdir(src), exp)
    writes.append({'name': name, 'src': src, 'out': os.path.join(OUT, 'universal-write', name, 'out', 'global_step2'),
                   'expected': exp if expect and not error else None, 'error': error, 'warnings': list(warnings)})


def neg_zero(m):
    m.master['l1.bias'][0] = -0.0
    m.m['l1.bias'][1] = -0.0
    return m


writes.append({'name': 'zero2-w3-for-universal', 'src': os.path.join(FIXTURES, 'zero2-w3-for-universal'),
               'out': os.path.join(OUT, 'universal-write', 'zero2-w3-for-universal', 'out', 'global_step2'),
               'expected': os.path.join(FIXTURES, 'zero2-w3-universal'), 'error': None, 'warnings': []})
write_case('wu-plain', lambda d: write_zero12(d, small(8), 2, uinfo={}))
write_case('wu-zero1-w3', lambda d: write_zero12(d, small(8), 3, stage=1, uinfo={}))
write_case('wu-bf16-optimizer', lambda d: write_zero12(d, small(8), 2, bf16=True, bf16_optimizer=True, uinfo={}))
write_case('wu-groups', lambda d: write_zero12(d, two_groups(), 3, uinfo={}))
write_case('wu-no-info', lambda d: write_zero12(d, small(8), 2),
           warnings=[P + 'the model states have no universal_checkpoint_info (ds_to_universal refuses them); written '
                         'as for an empty one'])
write_case('wu-patterns', lambda d: write_zero12(d, neg_zero(small(8)), 2, uinfo={
    'tp_replicated_parameter_patterns': [r'l2\.bias'], 'parameter_to_average_patterns': [r'l1\.b\w+'],
    'parameter_with_row_parallelism_patterns': [r'l2\.weight$'],
    'parameter_with_2_sub_params_cat_dim_0': [r'l1\.(?:weight)'], 'vocabulary_parameter_patterns': [r'emb\.'],
    'original_vocab_size': 9}))
write_case('wu-unused', lambda d: write_zero12(d, small(8), 2, uinfo={
    'tp_replicated_parameter_patterns': [r'nothing\d+'], 'parameter_to_average_patterns': [r'l1\.bias']}),
    warnings=[P + r'universal: pattern nothing\d+ matches no parameter (ds_to_universal refuses that unless '
                  '--no_strict)'])
write_case('wu-two-patterns', lambda d: write_zero12(d, small(8), 2, uinfo={
    'tp_replicated_parameter_patterns': ['l1', r'l1\.w']}),
    error=err(75, 'universal: l1.weight matches 2 patterns of tp_replicated_parameter_patterns'))
write_case('wu-sub-params', lambda d: write_zero12(d, small(8), 2, uinfo={
    'parameter_with_sub_params': [{'patterns': [r'l2\.weight'], 'shape': [6, 7], 'partition_dim': 0}]}),
    error=err(75, 'universal: l2.weight matches a parameter_with_sub_params pattern: not written'))
def int_steps(d):
    """FusedAdam's step: a Python int in each group's state"""
    write_zero12(d, small(8), 2, uinfo={})
    for r in range(2):
        def fn(o):
            for st in o['optimizer_state_dict']['base_optimizer_state']['state'].values():
                st['step'] = int(st['step'])
        rewrite(optim(d, r), fn)


write_case('wu-int-step', int_steps)
write_case('wu-lookahead', lambda d: write_zero12(d, small(8), 2, uinfo={
    'parameter_to_average_patterns': [r'l1(?=\.)']}),
    error=err(75, r'universal: pattern l1(?=\.) of parameter_to_average_patterns uses Python regular-expression '
                  'syntax that ckptscope does not read'))
write_case('wu-vocab-no-size', lambda d: write_zero12(d, small(8), 2, uinfo={
    'vocabulary_parameter_patterns': [r'emb\.weight']}),
    error=err(73, 'universal: emb.weight matches a vocabulary pattern, and universal_checkpoint_info has no '
                  'original_vocab_size'))
write_case('wu-zero3', lambda d: write_zero3(d, small(8), 2),
           error=err(75, 'DeepSpeed v0.14.4 has no universal checkpoint for ZeRO-3 (ds_to_universal reads ZeRO-1/2 '
                         'and BF16_Optimizer files)'))
with open(os.path.join(OUT, 'universal-write', 'manifest.json'), 'w', encoding='utf-8') as f:
    json.dump({'writes': writes}, f, indent=1, ensure_ascii=False)


# ---- runs (format.md 9): tag folders of one training run, each step torch's AdamW ----
runs = []


def adam_step(model, step, seed, lr=0.01):
    """the model after one step of torch's AdamW at the groups' config (group_config) from `step`,
    with gradients drawn from `seed`: its masters and moments (frozen parameters, buffers kept)"""
    nxt = copy.deepcopy(model)
    nxt.grad_rms = {}  # each parameter's gradient of this step: its root mean square
    g = torch.Generator().manual_seed(seed)
    for names in model.groups:
        for n in names:
            p = torch.nn.Parameter(model.master[n].clone())
            opt = torch.optim.AdamW([p], lr=lr, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.01)
            opt.state[p] = {'step': torch.tensor(float(step)), 'exp_avg': model.m[n].clone(),
                            'exp_avg_sq': model.v[n].clone()}
            p.grad = torch.randn(p.shape, generator=g) * 1e-2
            nxt.grad_rms[n] = float(p.grad.double().pow(2).mean().sqrt())
            opt.step()
            nxt.master[n], nxt.m[n] = p.detach().clone(), opt.state[p]['exp_avg'].clone()
            nxt.v[n] = opt.state[p]['exp_avg_sq'].clone()
    return nxt


def trained(model, seed):
    """the model at step 2: two AdamW steps from zero moments"""
    for n in model.m:
        model.m[n], model.v[n] = torch.zeros_like(model.m[n]), torch.zeros_like(model.v[n])
    return adam_step(adam_step(model, 0, seed), 1, seed + 1)


ADAMW = ds_config(2, False, {'type': 'AdamW', 'params': {'lr': 0.01}})
# a save_dir of three steps, the last saved on another world size (the state is per parameter)
d = os.path.join(OUT, 'runs', 'zero2')
m2 = trained(small(), 20)
m3 = adam_step(m2, 2, 10)
m4 = adam_step(m3, 3, 11)
write_zero12(d, m2, 2, step=2.0, tag='global_step2', config=ADAMW)
write_zero12(d, m3, 2, step=3.0, tag='global_step3', config=ADAMW)
write_zero12(d, m4, 3, step=4.0, tag='global_step4', config=ADAMW)
runs.append({'name': 'zero2', 'dir': d, 'tags': ['global_step2', 'global_step3', 'global_step4'], 'lr': 0.01,
             'gradients': [m3.grad_rms, m4.grad_rms]})
# the step after global_step2 taken at lr 0.02, while the groups stored 0.01 for it
d = os.path.join(OUT, 'runs', 'lr')
write_zero12(d, m2, 2, step=2.0, tag='global_step2', config=ADAMW)
write_zero12(d, adam_step(m2, 2, 10, lr=0.02), 2, step=3.0, tag='global_step3', config=ADAMW)
runs.append({'name': 'lr', 'dir': d, 'tags': ['global_step2', 'global_step3']})
# ZeRO-3, two steps
d = os.path.join(OUT, 'runs', 'zero3')
write_zero3(d, m2, 2, step=2.0, tag='global_step2')
write_zero3(d, m3, 3, step=3.0, tag='global_step3')
runs.append({'name': 'zero3', 'dir': d, 'tags': ['global_step2', 'global_step3']})
# a folder of another run (another seed) at the next step
d = os.path.join(OUT, 'runs', 'other')
write_zero12(d, m2, 2, step=2.0, tag='global_step2', config=ADAMW)
write_zero12(d, adam_step(trained(small(seed=9), 30), 2, 12), 2, step=3.0, tag='global_step3', config=ADAMW)
runs.append({'name': 'other', 'dir': d, 'tags': ['global_step2', 'global_step3']})
# too few elements to tell (41: two_groups)
d = os.path.join(OUT, 'runs', 'few')
t2 = trained(two_groups(), 40)
write_zero12(d, t2, 2, step=2.0, tag='global_step2', config=ADAMW)
write_zero12(d, adam_step(t2, 2, 13), 2, step=3.0, tag='global_step3', config=ADAMW)
runs.append({'name': 'few', 'dir': d, 'tags': ['global_step2', 'global_step3']})
# another layout: the next tag folder's model has another parameter's shape
d = os.path.join(OUT, 'runs', 'layouts')
write_zero12(d, m2, 2, step=2.0, tag='global_step2', config=ADAMW)
write_zero12(d, trained(two_groups(), 50), 2, step=3.0, tag='global_step3', config=ADAMW)
runs.append({'name': 'layouts', 'dir': d, 'tags': ['global_step2', 'global_step3']})
# the same names, one parameter resized
d = os.path.join(OUT, 'runs', 'shapes')
wide = Model([('emb.weight', (12, 6)), ('l1.weight', (7, 6)), ('l1.bias', (7,)), ('l2.weight', (6, 7)),
              ('l2.bias', (6,))], [['emb.weight', 'l1.weight', 'l1.bias', 'l2.weight', 'l2.bias']],
             ties=[('head.weight', 'emb.weight')], frozen=[('frozen.weight', (3, 5))], buffers=[('scale', (1,))])
write_zero12(d, m2, 2, step=2.0, tag='global_step2', config=ADAMW)
write_zero12(d, trained(wide, 60), 2, step=3.0, tag='global_step3', config=ADAMW)
runs.append({'name': 'shapes', 'dir': d, 'tags': ['global_step2', 'global_step3']})


# ---- conversions (format.md 11.8): the consolidated optimizer and fp32 model expected, built here
# from the writer's values (tests/c/test_ds_convert.c, tests/c/ds_convert_check.py) ----
converts = []


def expected(model, W, values, groups, step, stage=2, bf16=False, id_groups=None):
    """the torch.optim state dict and the fp32 model a conversion must give: ids group by group,
    state keys and group keys in stored order, an alias its owner's tensor, frozen parameters as
    the module (or ZeRO-3 fragments) holds them widened to float32"""
    state, pgs, i = {}, [], 0
    for g, names in enumerate(id_groups or model.groups):
        ids = []
        for n in names:
            v = values[n]
            st = {'step': step}
            st['exp_avg'] = v['exp_avg']
            st['exp_avg_sq'] = v['exp_avg_sq']
            if 'max_exp_avg_sq' in v:
                st['max_exp_avg_sq'] = v['max_exp_avg_sq']
            state[i] = st
            ids.append(i)
            i += 1
        pgs.append({**{k: x for k, x in groups[g].items() if k != 'params'}, 'params': ids})
    dt = torch.bfloat16 if bf16 else torch.float32
    out = collections.OrderedDict()
    for name, kind in model.order:
        if kind == 'param':
            out[name] = values[name]['fp32']
        elif kind == 'alias':
            out[name] = out[model.ties[name]]
        elif kind == 'frozen':
            out[name] = model.master[name].to(dt).to(torch.float32)
        else:
            out[name] = model.master[name]
    return {'optimizer': {'state': state, 'param_groups': pgs}, 'model': out}


def convert_case(name, d, model=None, W=None, values=None, groups=None, step=None, error=None, tladamf=None,
                 refused=None, real=False, **kw):
    entry = {'name': name, 'dir': d, 'error': error, 'real': real, 'tladamf': tladamf, 'refused': refused}
    if model is not None:
        path = os.path.join(OUT, 'converts', name + '.pt')
        os.makedirs(os.path.dirname(path), exist_ok=True)
        torch.save(expected(model, W, values, groups, step, **kw), path)
        entry['expect'] = path
        entry['module'] = [[n, k, list(model.shapes[model.ties.get(n, n)])] for n, k in model.order]
        entry['groups'] = kw.get('id_groups') or model.groups
        entry['ties'] = dict(model.ties)
    converts.append(entry)


NO_KIND = None  # a torch 1.13 AdamW group names no kind: TorchLean needs --kind (docs/pytorch.md)
for fx in ('zero1-w2', 'zero2-w2', 'zero2-w2-bf16', 'zero2-w3', 'zero3-w2', 'zero3-w3', 'zero3-w2-bf16'):
    convert_case('real-' + fx, os.path.join(FIXTURES, fx), real=True, tladamf={'ok': True})
sm = lambda W: small(W)
for label, W, write, m, kw in (
        ('zero1-w2', 2, lambda d, m: write_zero12(d, m, 2, stage=1), sm(2), {}),
        ('zero2-w3', 3, lambda d, m: write_zero12(d, m, 3), sm(3), {}),
        ('zero3-w3', 3, lambda d, m: write_zero3(d, m, 3), sm(3), {}),
        ('zero2-w4-bf16', 4, lambda d, m: write_zero12(d, m, 4, bf16=True), sm(4), {'bf16': True}),
        ('zero3-w2-bf16', 2, lambda d, m: write_zero3(d, m, 2, bf16=True), sm(2), {'bf16': True}),
        ('bf16-optimizer-w2', 2, lambda d, m: write_zero12(d, m, 2, bf16=True, bf16_optimizer=True), sm(2),
         {'bf16': True}),
        ('zero2-w8-groups', 8, lambda d, m: write_zero12(d, m, 8), two_groups(), {}),
        ('zero3-w8-subgroups', 8, lambda d, m: write_zero3(d, m, 8, sub_group_size=2), two_groups(), {}),
        ('zero3-w3-subgroups', 3, lambda d, m: write_zero3(d, m, 3, sub_group_size=4), two_groups(), {}),
        ('zero2-w3-amsgrad', 3, lambda d, m: write_zero12(d, m, 3, amsgrad=True), two_groups(), {})):
    d = folder('conv-' + label)
    vals = write(d, m)
    gc = [{**group_config(), 'params': [g], **({'amsgrad': True} if 'amsgrad' in label else {})}
          for g in range(len(m.groups))]
    convert_case('conv-' + label, d, m, W, vals, gc, torch.tensor(2.0), **kw,
                 tladamf={'ok': True})


# decay and no-decay groups (Hugging Face's): group 1 without weight decay
d = folder('conv-zero2-w3-decay-no-decay')
m = two_groups()
vals = write_zero12(d, m, 3)
for r in range(3):
    rewrite(optim(d, r), lambda o: o['optimizer_state_dict']['base_optimizer_state']['param_groups'][1].update(
        weight_decay=0.0))
convert_case('conv-zero2-w3-decay-no-decay', d, m, 3, vals,
             [{**group_config(), 'params': [0]}, {**group_config(wd=0.0), 'params': [1]}], torch.tensor(2.0),
             tladamf={'ok': True})


# round_robin_gradients: each group's flat buffer (and param_shapes) in stage_1_and_2.py's
# _round_robin_reorder order; the ids are numbered in module order, with a warning
def round_robin(names, W):
    parts = {}
    for i, n in enumerate(names):
        parts.setdefault(i % W, []).append(n)
    return [n for k in parts for n in parts[k]]


d = folder('conv-zero2-w2-round-robin')
plain = small(2)
m = small(2)
m.groups = [round_robin(names, 2) for names in plain.groups]
cfg = ds_config(2, False)
cfg['zero_optimization']['round_robin_gradients'] = True
vals = write_zero12(d, m, 2, config=cfg)
convert_case('conv-zero2-w2-round-robin', d, m, 2, vals, [{**group_config(), 'params': [0]}], torch.tensor(2.0),
             tladamf={'ok': True}, id_groups=plain.groups)
converts[-1]['warnings'] = [P + 'group 0 is stored in round-robin order; numbered in module order']


def fused(o, step, bias_correction=True):
    """FusedAdam's state: the step a Python int, groups with bias_correction"""
    b = o['optimizer_state_dict']['base_optimizer_state']
    for st in b['state'].values():
        st['step'] = step
    for g in b['param_groups']:
        g['bias_correction'] = bias_correction


for label, step in (('fusedadam-w2', 2), ('fusedadam-w2-big-step', 2 ** 24 + 2)):
    d = folder('conv-' + label)
    m = small(2)
    vals = write_zero12(d, m, 2, step=float(step))
    for r in range(2):
        rewrite(optim(d, r), lambda o: fused(o, step))
    gc = [{**group_config(), 'bias_correction': True, 'params': [0]}]
    convert_case('conv-' + label, d, m, 2, vals, gc,
                 torch.tensor(float(step), dtype=torch.float64 if step >= 2 ** 24 else torch.float32),
                 tladamf={'ok': True})
d = folder('conv-fusedadam-no-bias-correction')
write_zero12(d, small(2), 2)
for r in range(2):
    rewrite(optim(d, r), lambda o: fused(o, 2, bias_correction=False))
convert_case('conv-fusedadam-no-bias-correction', d, error=err(
    50, 'group 0 has bias_correction False: no torch.optim or TorchLean Adam skips bias correction'))
# a large parameter (16 MB per tensor, 8 MB per rank): the conversions' memory stays bounded
# (tests/c/test_ds_convert_memory.c; not a "converts" entry, which every conversion test writes)
d = folder('conv-zero2-w2-large')
m = Model([('big.weight', (4096, 1024)), ('big.bias', (1024,))], [['big.weight', 'big.bias']], seed=9)
write_zero12(d, m, 2)
large = {'name': 'conv-zero2-w2-large', 'dir': d}
# a folder with an error of 11.5 is not converted: its failure, with its text
broken = next(c for c in cases if c['name'] == 'c20-steps')
convert_case('conv-broken-steps', broken['dir'], error=broken['error'])

with open(os.path.join(OUT, 'manifest.json'), 'w', encoding='utf-8') as f:
    json.dump({'cases': cases, 'pairings': pairings, 'runs': runs, 'converts': converts, 'large': large}, f, indent=1,
              ensure_ascii=False)
print(f'{len(cases)} cases')
