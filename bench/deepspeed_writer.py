"""The benchmark's DeepSpeed ZeRO checkpoints (bench/deepspeed.mjs), written as DeepSpeed v0.14.4
writes them (stage_1_and_2.py / stage3.py state_dict, engine.py _save_checkpoint) without
importing deepspeed: a stand-in package defines the names DeepSpeed's files pickle, as
tests/c/deepspeed_seeds.py does.

  deepspeed_writer.py sparse llama7b W STAGE OUT
      the Llama-7B-like model (291 parameters, 6.74 G; decay and no-decay groups), a bf16 run,
      ZeRO-STAGE (2 or 3) at W ranks, as SPARSE files: torch.save's pickles and zip structure,
      every storage over 64 KiB a hole (zeros that cost no disk; the zip's CRC-32s are those of
      the zeros), the small ones (the steps) written.
      torch.save's pickler runs on tensors that are never touched (torch.empty); the records go
      through a zip writer here that seeks over each storage instead of writing it.
  deepspeed_writer.py real gpt2 W STAGE OUT [TL.ckpt TL.tlsf]
      a GPT-2-small-sized model (148 parameters, 124.4 M; no lm_head) with random values, a
      float32 run, saved by torch.save itself; with TL.ckpt and TL.tlsf, the same model's moments
      as a TorchLean TLADAMF v2 file (AdamW) and its fp32 masters as a TLSF32B file, the same
      values in module order.
Prints a JSON line: the folder, its files with sizes, the parameter count."""
import collections
import ctypes
import io
import json
import math
import os
import pickle
import struct
import sys
import tempfile
import zlib

import torch
import torch.serialization

# ---- the stand-in package: DeepSpeed's names, as DeepSpeed defines them ----
pkg = tempfile.mkdtemp()
for name, text in {
    'deepspeed/__init__.py': '',
    'deepspeed/runtime/__init__.py': '',
    'deepspeed/runtime/fp16/__init__.py': '',
    'deepspeed/runtime/fp16/loss_scaler.py':
        'class LossScaler:\n    def __init__(self, scale=1.0):\n        self.cur_scale = scale\n'
        '        self.dynamic = False\n',
    'deepspeed/utils/__init__.py': '',
    'deepspeed/utils/tensor_fragment.py':
        'from dataclasses import dataclass\n@dataclass\nclass fragment_address:\n    numel: int\n    start: int\n',
    'deepspeed/runtime/zero/__init__.py': '',
    'deepspeed/runtime/zero/config.py':
        'from enum import Enum\nclass ZeroStageEnum(int, Enum):\n    disabled = 0\n    optimizer_states = 1\n'
        '    gradients = 2\n    weights = 3\n',
}.items():
    os.makedirs(os.path.dirname(os.path.join(pkg, name)), exist_ok=True)
    with open(os.path.join(pkg, name), 'w') as f:
        f.write(text)
sys.path.insert(0, pkg)
from deepspeed.runtime.fp16.loss_scaler import LossScaler  # noqa: E402
from deepspeed.runtime.zero.config import ZeroStageEnum  # noqa: E402
from deepspeed.utils.tensor_fragment import fragment_address  # noqa: E402

VERSION = '0.14.4'


# ---- models: (name, shape) in module order; the decay group's names, the no-decay group's ----

def llama7b():
    d, f, vocab, layers = 4096, 11008, 32000, 32
    params = [('model.embed_tokens.weight', (vocab, d))]
    for i in range(layers):
        p = f'model.layers.{i}.'
        params += [(p + 'self_attn.q_proj.weight', (d, d)), (p + 'self_attn.k_proj.weight', (d, d)),
                   (p + 'self_attn.v_proj.weight', (d, d)), (p + 'self_attn.o_proj.weight', (d, d)),
                   (p + 'mlp.gate_proj.weight', (f, d)), (p + 'mlp.up_proj.weight', (f, d)),
                   (p + 'mlp.down_proj.weight', (d, f)), (p + 'input_layernorm.weight', (d,)),
                   (p + 'post_attention_layernorm.weight', (d,))]
    params += [('model.norm.weight', (d,)), ('lm_head.weight', (vocab, d))]
    return params


def gpt2():
    d, vocab, ctx, layers = 768, 50257, 1024, 12
    params = [('transformer.wte.weight', (vocab, d)), ('transformer.wpe.weight', (ctx, d))]
    for i in range(layers):
        p = f'transformer.h.{i}.'
        params += [(p + 'ln_1.weight', (d,)), (p + 'ln_1.bias', (d,)), (p + 'attn.c_attn.weight', (d, 3 * d)),
                   (p + 'attn.c_attn.bias', (3 * d,)), (p + 'attn.c_proj.weight', (d, d)),
                   (p + 'attn.c_proj.bias', (d,)), (p + 'ln_2.weight', (d,)), (p + 'ln_2.bias', (d,)),
                   (p + 'mlp.c_fc.weight', (d, 4 * d)), (p + 'mlp.c_fc.bias', (4 * d,)),
                   (p + 'mlp.c_proj.weight', (4 * d, d)), (p + 'mlp.c_proj.bias', (d,))]
    params += [('transformer.ln_f.weight', (d,)), ('transformer.ln_f.bias', (d,))]
    return params


def groups_of(params):
    """Hugging Face's two groups: weight decay for matrices, none for vectors (norms, biases)."""
    return [[n for n, s in params if len(s) > 1], [n for n, s in params if len(s) == 1]]


def group_config(wd):
    return {'weight_decay': wd, 'lr': 1e-4, 'betas': (0.9, 0.999), 'eps': 1e-08, 'amsgrad': False, 'foreach': None,
            'maximize': False, 'capturable': False}


def ds_config(stage, bf16):
    return {'train_micro_batch_size_per_gpu': 1, 'gradient_accumulation_steps': 1,
            'zero_optimization': {'stage': stage}, 'bf16': {'enabled': bf16},
            'optimizer': {'type': 'AdamW', 'params': {'lr': 1e-4}}}


# ---- a zip writer that seeks over the storages (torch.save's records, sparse) ----

ZERO_CRC = {}
SMALL = 1 << 16   # storages up to this size are written (steps); larger ones are holes


def zeros_crc(n):
    if n not in ZERO_CRC:
        block = bytes(1 << 24)
        crc, left = 0, n
        while left:
            k = min(left, len(block))
            crc = zlib.crc32(block[:k] if k < len(block) else block, crc)
            left -= k
        ZERO_CRC[n] = crc
    return ZERO_CRC[n]


class SparseZip:
    """What torch._C.PyTorchFileWriter writes (members in one folder named after the file, data
    aligned to 64 bytes by an 'FB' extra field, the 'version' record last, ZIP64 where a size or
    offset needs it), each storage's bytes a hole."""

    def __init__(self, path):
        self.f = open(path, 'wb')
        self.prefix = os.path.splitext(os.path.basename(path))[0]
        self.entries = []

    def write_record(self, name, data, n):
        full = f'{self.prefix}/{name}'.encode()
        off = self.f.tell()
        if not isinstance(data, (bytes, bytearray)) and n <= SMALL:
            data = ctypes.string_at(data, n)   # a step, a 0-d tensor: its real bytes
        real = isinstance(data, (bytes, bytearray))
        crc = zlib.crc32(data) if real else zeros_crc(n)
        big = n >= 0xffffffff
        x64 = struct.pack('<HHQQ', 1, 16, n, n) if big else b''
        pad = -(off + 30 + len(full) + len(x64) + 4) % 64
        extra = x64 + struct.pack('<HH', 0x4246, pad) + b'Z' * pad
        self.f.write(struct.pack('<IHHHHHIIIHH', 0x04034b50, 45 if big else 20, 0, 0, 0, 0x21, crc,
                                 0xffffffff if big else n, 0xffffffff if big else n, len(full), len(extra)))
        self.f.write(full + extra)
        if real:
            self.f.write(data)
        else:
            self.f.seek(n, 1)
        self.entries.append((full, off, n, crc))

    def close(self):
        self.write_record('version', b'3\n', 2)
        cd = self.f.tell()
        out = io.BytesIO()
        for full, off, n, crc in self.entries:
            fields = ([n, n] if n >= 0xffffffff else []) + ([off] if off >= 0xffffffff else [])
            x64 = struct.pack('<HH', 1, 8 * len(fields)) + b''.join(struct.pack('<Q', v) for v in fields) \
                if fields else b''
            big_n = n >= 0xffffffff
            out.write(struct.pack('<IHHHHHHIIIHHHHHII', 0x02014b50, 45, 45 if fields else 20, 0, 0, 0, 0x21, crc,
                                  0xffffffff if big_n else n, 0xffffffff if big_n else n, len(full), len(x64), 0,
                                  0, 0, 0, 0xffffffff if off >= 0xffffffff else off))
            out.write(full + x64)
        cdb = out.getvalue()
        self.f.write(cdb)
        count = len(self.entries)
        if cd >= 0xffffffff or count >= 0xffff:
            rec = self.f.tell()
            self.f.write(struct.pack('<IQHHIIQQQQ', 0x06064b50, 44, 45, 45, 0, 0, count, count, len(cdb), cd))
            self.f.write(struct.pack('<IIQI', 0x07064b50, 0, rec, 1))
            self.f.write(struct.pack('<IHHHHIIH', 0x06054b50, 0, 0, 0xffff, 0xffff, 0xffffffff, 0xffffffff, 0))
        else:
            self.f.write(struct.pack('<IHHHHIIH', 0x06054b50, 0, 0, count, count, len(cdb), cd, 0))
        self.f.close()


def save(obj, path, sparse):
    if not sparse:
        torch.save(obj, path)
        return
    z = SparseZip(path)
    torch.serialization._save(obj, z, pickle, 2)
    z.close()


# ---- ZeRO-1/2 and ZeRO-3 as DeepSpeed saves them ----

def zero12(td, params, W, bf16, values, sparse, step=10):
    """stage_1_and_2.py: each group a flat buffer padded to a multiple of 2W, rank r holding
    [r Pg, (r+1) Pg); the last rank's fp32 partition without the padding."""
    shapes = dict(params)
    numel = {n: math.prod(s) for n, s in params}
    dt = torch.bfloat16 if bf16 else torch.float32
    groups = groups_of(params)
    layout = []
    for names in groups:
        N = sum(numel[n] for n in names)
        pad = (2 * W - N % (2 * W)) % (2 * W)
        layout.append((names, N, pad, (N + pad) // W))
    module, flats = collections.OrderedDict(), []
    for names, N, pad, Pg in layout:
        if sparse:
            buf, flat = torch.empty(N + pad, dtype=dt), None
        else:
            flat = {k: torch.cat([values[k][n].flatten() for n in names] + [torch.zeros(pad)]) for k in values}
            buf = flat['fp32'].to(dt)
        flats.append(flat)
        off = 0
        for n in names:
            module[n] = buf[off:off + numel[n]].view(shapes[n])
            off += numel[n]
    module = collections.OrderedDict((n, module[n]) for n, _ in params)
    ms = dict(module=module, buffer_names=[], optimizer=None,
              param_shapes=[collections.OrderedDict((n, torch.Size(shapes[n])) for n in names) for names in groups],
              frozen_param_shapes=collections.OrderedDict(), shared_params={},
              frozen_param_fragments=collections.OrderedDict(), lr_scheduler=None, data_sampler=None,
              random_ltd=None, sparse_tensor_module_names=set(), skipped_steps=0, global_steps=step,
              global_samples=8 * step, dp_world_size=W, mp_world_size=1, ds_config=ds_config(2, bf16),
              ds_version=VERSION)
    save(ms, os.path.join(td, 'mp_rank_00_model_states.pt'), sparse)
    del ms, module
    for r in range(W):
        state, pgroups, fp32, maps = {}, [], [], []
        for g, (names, N, pad, Pg) in enumerate(layout):
            keep = Pg - pad if r == W - 1 else Pg
            if sparse:
                part = {k: torch.empty(Pg) for k in ('exp_avg', 'exp_avg_sq')}
                part['fp32'] = torch.empty(keep)
            else:
                part = {k: flats[g][k][r * Pg:(r + 1) * Pg].clone() for k in ('exp_avg', 'exp_avg_sq')}
                part['fp32'] = flats[g]['fp32'][r * Pg:r * Pg + keep].clone()
            state[g] = {'step': torch.tensor(float(step)), 'exp_avg': part['exp_avg'],
                        'exp_avg_sq': part['exp_avg_sq']}
            pgroups.append({**group_config(0.1 if g == 0 else 0.0), 'params': [g]})
            fp32.append(part['fp32'])
            mp, off = collections.OrderedDict(), 0
            for n in names:
                lo, hi = max(off, r * Pg), min(off + numel[n], (r + 1) * Pg)
                if lo < hi:
                    mp[n] = fragment_address(numel=hi - lo, start=lo - r * Pg)
                off += numel[n]
            maps.append(mp)
        osd = dict(loss_scaler=LossScaler(), dynamic_loss_scale=False, overflow=False, clip_grad=1.0,
                   base_optimizer_state={'state': state, 'param_groups': pgroups},
                   single_partition_of_fp32_groups=fp32, zero_stage=ZeroStageEnum.gradients,
                   group_paddings=[layout[g][2] if r == W - 1 else 0 for g in range(len(layout))],
                   partition_count=[W] * len(layout), ds_version=VERSION, param_slice_mappings=maps)
        name = f'{"bf16_" if bf16 else ""}zero_pp_rank_{r}_mp_rank_00_optim_states.pt'
        save({'optimizer_state_dict': osd, 'ds_config': ds_config(2, bf16), 'ds_version': VERSION},
             os.path.join(td, name), sparse)


def zero3(td, params, W, bf16, values, sparse, step=10, sub_group_size=10 ** 9):
    """stage3.py: each parameter split in W equal parts (padded), rank r's parts of a sub-group
    back to back; every rank saves its own model states (placeholders and its frozen parts)."""
    numel = {n: math.prod(s) for n, s in params}
    shapes = dict(params)
    dt = torch.bfloat16 if bf16 else torch.float32
    q = {n: -(-numel[n] // W) for n in numel}
    subs = []
    for g, names in enumerate(groups_of(params)):
        cur, total = [], 0
        for n in names:
            cur.append(n)
            total += q[n]
            if total >= sub_group_size:
                subs.append((g, cur))
                cur, total = [], 0
        if cur:
            subs.append((g, cur))
    for r in range(W):
        module = collections.OrderedDict((n, torch.empty(0, dtype=dt)) for n, _ in params)
        ms = dict(module=module, buffer_names=[], optimizer=None,
                  param_shapes=[collections.OrderedDict((n, torch.Size(shapes[n])) for n in names)
                                for _, names in subs],
                  frozen_param_shapes=collections.OrderedDict(), shared_params={},
                  frozen_param_fragments=collections.OrderedDict(), lr_scheduler=None, data_sampler=None,
                  random_ltd=None, sparse_tensor_module_names=set(), skipped_steps=0, global_steps=step,
                  global_samples=8 * step, dp_world_size=W, mp_world_size=1, ds_config=ds_config(3, bf16),
                  ds_version=VERSION)
        save(ms, os.path.join(td, f'zero_pp_rank_{r}_mp_rank_00_model_states.pt'), sparse)
        state, fp32 = {}, []
        pgroups = [{**group_config(0.1 if g == 0 else 0.0), 'params': []} for g in range(2)]

        def cat(key, names):
            if sparse:
                return torch.empty(sum(q[n] for n in names))
            return torch.cat([torch.cat([values[key][n].flatten(), torch.zeros(q[n] * W - numel[n])])
                              [r * q[n]:(r + 1) * q[n]] for n in names])
        for s, (g, names) in enumerate(subs):
            state[s] = {'step': torch.tensor(float(step)), 'exp_avg': cat('exp_avg', names),
                        'exp_avg_sq': cat('exp_avg_sq', names)}
            fp32.append(cat('fp32', names))
            pgroups[g]['params'].append(s)
        osd = {'zero_stage': ZeroStageEnum.weights, 'loss_scaler': LossScaler(), 'dynamic_loss_scale': False,
               'overflow': False, 'partition_count': W,
               'optimizer_state_dict': {'state': state, 'param_groups': pgroups}, 'fp32_flat_groups': fp32}
        name = f'{"bf16_" if bf16 else ""}zero_pp_rank_{r}_mp_rank_00_optim_states.pt'
        save({'optimizer_state_dict': osd, 'ds_config': ds_config(3, bf16), 'ds_version': VERSION},
             os.path.join(td, name), sparse)


def torchlean(params, values, ckpt, tlsf, step=10):
    """The same model as TorchLean saves it: TLADAMF v2 (AdamW, wd 0.1) and TLSF32B, module order."""
    def u64(*v):
        return struct.pack(f'<{len(v)}Q', *v)
    with open(ckpt, 'wb') as f:
        f.write(b'TLADAMF' + u64(2, 1) + struct.pack('<4d', 0.9, 0.999, 1e-8, 0.1) + u64(len(params)))
        for n, s in params:
            f.write(u64(len(s), *s, math.prod(s), 1))
        f.write(u64(len(params)))
        for i, (n, s) in enumerate(params):
            f.write(u64(i, step, math.prod(s)))
            for key in ('exp_avg', 'exp_avg_sq'):
                f.write(values[key][n].contiguous().numpy().astype('<f4').tobytes())
    with open(tlsf, 'wb') as f:
        f.write(b'TLSF32B' + u64(1, len(params)))
        for n, s in params:
            f.write(u64(len(s), *s, math.prod(s)))
            f.write(values['fp32'][n].contiguous().numpy().astype('<f4').tobytes())


def main():
    mode, model, W, stage, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    params = {'llama7b': llama7b, 'gpt2': gpt2}[model]()
    sparse = mode == 'sparse'
    values = None
    if not sparse:
        g = torch.Generator().manual_seed(1234)
        values = {'fp32': {}, 'exp_avg': {}, 'exp_avg_sq': {}}
        for n, s in params:
            values['fp32'][n] = torch.randn(s, generator=g) * 0.02
            values['exp_avg'][n] = torch.randn(s, generator=g) * 1e-3
            values['exp_avg_sq'][n] = torch.rand(s, generator=g) * 1e-6
    tag = 'global_step10'
    td = os.path.join(out, tag)
    os.makedirs(td, exist_ok=True)
    bf16 = sparse
    (zero12 if stage in (1, 2) else zero3)(td, params, W, bf16, values, sparse)
    with open(os.path.join(out, 'latest'), 'w') as f:
        f.write(tag)
    if not sparse and len(sys.argv) > 7:
        torchlean(params, values, sys.argv[6], sys.argv[7])
    files = {n: os.path.getsize(os.path.join(td, n)) for n in sorted(os.listdir(td))}
    print(json.dumps({'dir': out, 'tag': tag, 'files': files, 'parameters': len(params),
                      'elements': sum(math.prod(s) for _, s in params)}))


if __name__ == "__main__":
    main()
