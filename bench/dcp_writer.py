"""The benchmark's DCP folder: a Llama-7B-like model saved by torch.distributed.checkpoint (form N,
torch >= 2.4) from 8 ranks, written as tests/c/dcp_seeds.py's writer writes small folders (the same
planner steps and stand-in classes), but SPARSE: every record is what `_write_item` writes
(torch.save into the rank's stream at its offset), its storages over 64 KiB holes (zeros that
cost no disk), through bench/deepspeed_writer.py's zip writer; the files have their true sizes.

  dcp_writer.py OUT
      OUT/: `.metadata` and `__{r}_0.distcp` for r < 8: `model.{fqn}` bfloat16 and
      `optim.state.{fqn}.{step, exp_avg, exp_avg_sq}` float32 (AdamW), Hugging Face's decay and
      no-decay groups as `optim.param_groups.{g}.{key}`; every parameter and moment row-sharded
      on dim 0 with torch.chunk sizes (FSDP2's Shard(0)), the 0-d steps and the groups' values
      deduplicated as dedup_save_plans places them; planner_data, storage_meta, version 1.0.0.
The same model's TLADAMF file, its peer in bench/dcp.mjs, is tests/js/llama.mjs's (the same
slots: bench/deepspeed_writer.py llama7b).
Prints a JSON line: keys, tensor keys, chunks, records (items), files and their sizes, bytes,
.metadata's size, the parameter and element counts."""
import json
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'tests', 'c'))
sys.path.insert(0, HERE)
import dcp_seeds  # noqa: E402
from deepspeed_writer import SMALL, SparseZip, groups_of, llama7b  # noqa: E402
import torch.serialization  # noqa: E402
import pickle  # noqa: E402

WORLD = 8
STEP = 10


class Window:
    """The rank's stream seen from a record's start: torch's zip writer counts offsets (and the
    64-byte alignment of member data) from where its torch.save began."""

    def __init__(self, f):
        self.f, self.base = f, f.tell()

    def write(self, b):
        return self.f.write(b)

    def tell(self):
        return self.f.tell() - self.base

    def seek(self, n, whence):
        return self.f.seek(n, whence)

    def close(self):
        pass


def sparse_record(item, stream):
    """torch.save of the item into the stream, as `_write_item` does; storages over 64 KiB holes."""
    z = SparseZip.__new__(SparseZip)
    z.f, z.prefix, z.entries = Window(stream), 'archive', []
    if item.kind == 'bytes':
        value = item.value
    elif item.tensor.dim() == 0:
        value = torch.tensor(float(STEP))
    else:
        n = math.prod(item.sizes) * item.tensor.element_size()
        value = (torch.zeros if n <= SMALL else torch.empty)(item.sizes, dtype=item.tensor.dtype)
    torch.serialization._save(value, z, pickle, 2)
    z.close()


def state_dict(params):
    """{'model': {fqn: bf16}, 'optim': get_optimizer_state_dict's form}, tensors on the meta
    device: shapes and dtypes only."""
    model = {n: torch.empty(s, dtype=torch.bfloat16, device='meta') for n, s in params}
    state = {n: {'step': torch.empty((), device='meta'),
                 'exp_avg': torch.empty(s, device='meta'),
                 'exp_avg_sq': torch.empty(s, device='meta')} for n, s in params}
    groups = []
    for g, names in enumerate(groups_of(params)):
        grp = dict(dcp_seeds.ADAMW_GROUP)
        grp['lr'] = 1e-4
        grp['weight_decay'] = 0.1 if g == 0 else 0.0
        grp['params'] = names
        groups.append(grp)
    # the optimizer's state follows its groups' order (decay, then no-decay)
    order = [n for names in groups_of(params) for n in names]
    return {'model': model, 'optim': {'state': {n: state[n] for n in order}, 'param_groups': groups}}


def main():
    out = sys.argv[1]
    params = llama7b()
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        os.remove(os.path.join(out, name))
    C, fields, storage = dcp_seeds.save(state_dict(params), out, world=WORLD, record=sparse_record,
                                        checkpoint_id='/checkpoints/llama7b/step-10')
    dcp_seeds.write_metadata(out, C, fields, storage)
    sdm = fields['state_dict_metadata']
    tensors = [k for k, v in sdm.items() if hasattr(v, 'chunks')]
    files = {n: os.path.getsize(os.path.join(out, n)) for n in sorted(os.listdir(out))}
    print(json.dumps({
        'dir': out, 'keys': len(sdm), 'tensorKeys': len(tensors),
        'chunks': sum(len(sdm[k].chunks) for k in tensors), 'records': len(storage),
        'files': files, 'bytes': sum(v for k, v in files.items() if k != '.metadata'),
        'metadataBytes': files['.metadata'], 'parameters': len(params),
        'elements': sum(math.prod(s) for _, s in params)}))


if __name__ == '__main__':
    main()
