"""The peer ckptscope's DeepSpeed export is measured against (bench/deepspeed.mjs): what
DeepSpeed's zero_to_fp32.py does to consolidate the fp32 master weights of a ZeRO-2 or ZeRO-3
folder (torch.load of every rank's file, torch.cat of the partitions, slicing by param_shapes),
extended to the moments, every parameter's exp_avg, exp_avg_sq and master weights saved as one
safetensors file (the safetensors package is not installed for /usr/bin/python3: the file is
written here, header then each tensor's bytes, as safetensors.torch.save_file lays it out).

deepspeed is not imported: torch.load alone fails on these files without DeepSpeed installed
(`ModuleNotFoundError: No module named 'deepspeed'`, the pickles name its classes), so the
files go through a restricted unpickler that maps DeepSpeed's names to inert stand-ins and
refuses any other name outside torch's rebuild functions.

  deepspeed_peer.py TAGDIR OUT.safetensors [--fsync]
      prints {"seconds", "tensors", "bytes"}; --fsync: the output synced to the disk before it
      returns, as ckptscope's export (an atomic, durable write) does
  deepspeed_peer.py --plain FILE               torch.load alone: prints what it raises"""
import collections
import json
import math
import os
import pickle
import re
import struct
import sys
import time
import types

import torch


class Inert:
    """LossScaler, fragment_address: NEWOBJ then BUILD with their __dict__."""


class Stage:
    """ZeroStageEnum: pickled as getattr(ZeroStageEnum, name)."""


ALLOWED = {
    ('collections', 'OrderedDict'): collections.OrderedDict,
    ('torch._utils', '_rebuild_tensor_v2'): torch._utils._rebuild_tensor_v2,
    ('torch', 'Size'): torch.Size,
    ('__builtin__', 'set'): set,
    ('builtins', 'set'): set,
    ('torch', 'bfloat16'): torch.bfloat16,
    ('torch', 'float32'): torch.float32,
    ('deepspeed.runtime.fp16.loss_scaler', 'LossScaler'): Inert,
    ('deepspeed.utils.tensor_fragment', 'fragment_address'): Inert,
    ('deepspeed.runtime.zero.config', 'ZeroStageEnum'): Stage,
}


def restricted_getattr(obj, name):
    if obj is not Stage:
        raise pickle.UnpicklingError(f'getattr on {obj!r} refused')
    return name


class Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if module == 'torch' and name.endswith('Storage'):
            return getattr(torch, name)
        if (module, name) in (('__builtin__', 'getattr'), ('builtins', 'getattr')):
            return restricted_getattr
        if (module, name) in ALLOWED:
            return ALLOWED[(module, name)]
        raise pickle.UnpicklingError(f'{module}.{name} refused')


restricted = types.SimpleNamespace(**{k: getattr(pickle, k) for k in dir(pickle) if not k.startswith('__')})
restricted.Unpickler = Unpickler
restricted.__name__ = 'restricted'


def load(path):
    # Debian's torch 1.13 (1.13.0a0) replaces a pickle_module argument by pickle unless
    # weights_only is set: the module's own name is swapped for the call
    saved = torch.serialization.pickle
    torch.serialization.pickle = restricted
    try:
        return torch.load(path, map_location='cpu', pickle_module=restricted)
    finally:
        torch.serialization.pickle = saved


def rank_of(name):
    return int(re.search(r'zero_pp_rank_(\d+)_', name).group(1))


def consolidate(tag):
    files = sorted(os.listdir(tag))
    optim = sorted((f for f in files if f.endswith('optim_states.pt')), key=rank_of)
    model = 'mp_rank_00_model_states.pt' if 'mp_rank_00_model_states.pt' in files \
        else 'zero_pp_rank_0_mp_rank_00_model_states.pt'
    shapes = load(os.path.join(tag, model))['param_shapes']
    osds = [load(os.path.join(tag, f))['optimizer_state_dict'] for f in optim]
    W = len(osds)
    out = collections.OrderedDict()
    if 'fp32_flat_groups' in osds[0]:   # ZeRO-3: each parameter split in W equal parts
        for s, group in enumerate(shapes):
            flat = {'': [o['fp32_flat_groups'][s] for o in osds],
                    '.exp_avg': [o['optimizer_state_dict']['state'][s]['exp_avg'] for o in osds],
                    '.exp_avg_sq': [o['optimizer_state_dict']['state'][s]['exp_avg_sq'] for o in osds]}
            off = 0
            for name, shape in group.items():
                n = math.prod(shape)
                q = -(-n // W)
                for key in ('.exp_avg', '.exp_avg_sq', ''):
                    out[name + key] = torch.cat([p[off:off + q] for p in flat[key]])[:n].view(shape)
                off += q
    else:   # ZeRO-1/2: each group one flat buffer, cut in W partitions
        for g, group in enumerate(shapes):
            full = {'': torch.cat([o['single_partition_of_fp32_groups'][g] for o in osds]),
                    '.exp_avg': torch.cat([o['base_optimizer_state']['state'][g]['exp_avg'] for o in osds]),
                    '.exp_avg_sq': torch.cat([o['base_optimizer_state']['state'][g]['exp_avg_sq'] for o in osds])}
            off = 0
            for name, shape in group.items():
                n = math.prod(shape)
                for key in ('.exp_avg', '.exp_avg_sq', ''):
                    out[name + key] = full[key][off:off + n].view(shape)
                off += n
    return out


def save_safetensors(tensors, path, durable=False):
    header, at = {}, 0
    for name, t in tensors.items():
        n = t.numel() * 4
        header[name] = {'dtype': 'F32', 'shape': list(t.shape), 'data_offsets': [at, at + n]}
        at += n
    text = json.dumps(header, separators=(',', ':')).encode()
    text += b' ' * (-len(text) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(text)) + text)
        for t in tensors.values():
            f.write(t.contiguous().numpy().tobytes())
        if durable:   # on the disk before it returns, as ckptscope's export makes its output
            f.flush()
            os.fsync(f.fileno())
    return 8 + len(text) + at


def main():
    if sys.argv[1] == '--plain':
        try:
            torch.load(sys.argv[2], map_location='cpu')
            print('loaded')
        except Exception as e:  # noqa: BLE001 - the finding is what it raises
            print(f'{type(e).__name__}: {e}')
        return
    t0 = time.perf_counter()
    tensors = consolidate(sys.argv[1])
    size = save_safetensors(tensors, sys.argv[2], durable='--fsync' in sys.argv[3:])
    print(json.dumps({'seconds': time.perf_counter() - t0, 'tensors': len(tensors), 'bytes': size}))


main()
