"""Models to pair a DCP folder with (format.md 12.8), written with torch.save from the folder's own
model part, each tensor reassembled from its chunks by dcp_truth.py's reader.

`python3 dcp_pair_models.py DIR OUT` writes into OUT:
- model.pt: the model part's keys (without `model.`) in metadata order, the saved values;
- reordered.pt: the same keys reversed (DCP loads by name: order is not compared);
- names.json: the names alone, and model.safetensors: names and shapes (no ties, no order);
- missing.pt: without l2.bias, with extra.bias;
- shapes.pt: l1.bias of 8 elements, l2.weight transposed;
- tied.pt: ln.bias sharing ln.weight's storage and frozen.bias sharing l2.bias's (the folder saves
  different values for each pair), and l1.bias sharing nothing.
Nothing of torch.distributed is imported."""
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dcp_truth  # noqa: E402


def model_part(dirname):
    md, _ = dcp_truth.read_metadata(os.path.join(dirname, '.metadata'))
    entries = [(idx.get('fqn'), idx.get('offset'), info.state) for idx, info in md.get('storage_data').items()]
    out = {}
    for fqn, smd in md.get('state_dict_metadata').items():
        if not fqn.startswith('model.') or smd.name != 'TensorStorageMetadata':
            continue
        dtype = getattr(torch, smd.get('properties').state[0].split('.')[1])
        full = torch.zeros(list(smd.get('size')), dtype=dtype)
        for c in smd.get('chunks'):
            offs, sizes = list(c.get('offsets')), list(c.get('sizes'))
            info = [i for f, o, i in entries if f == fqn and o is not None and list(o) == offs][0]
            t = dcp_truth.load_record(dcp_truth.window(dirname, info))
            full[tuple(slice(o, o + s) for o, s in zip(offs, sizes))] = t
        out[fqn[len('model.'):]] = full
    return out


def save_safetensors(path, tensors):
    header, data = {}, b''
    for name, t in sorted(tensors.items()):
        raw = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        header[name] = {'dtype': 'F32', 'shape': list(t.shape), 'data_offsets': [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * (-len(h) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + data)


def main(dirname, out):
    os.makedirs(out, exist_ok=True)
    sd = model_part(dirname)
    torch.save(sd, os.path.join(out, 'model.pt'))
    torch.save({k: sd[k] for k in reversed(list(sd))}, os.path.join(out, 'reordered.pt'))
    with open(os.path.join(out, 'names.json'), 'w') as f:
        json.dump(list(sd), f)
    save_safetensors(os.path.join(out, 'model.safetensors'), sd)
    missing = {k: v for k, v in sd.items() if k != 'l2.bias'}
    missing['extra.bias'] = torch.zeros(3)
    torch.save(missing, os.path.join(out, 'missing.pt'))
    shapes = dict(sd)
    shapes['l1.bias'] = torch.zeros(8)
    shapes['l2.weight'] = sd['l2.weight'].t().contiguous()
    torch.save(shapes, os.path.join(out, 'shapes.pt'))
    tied = dict(sd)
    tied['ln.bias'] = tied['ln.weight']
    tied['frozen.bias'] = tied['l2.bias']
    torch.save(tied, os.path.join(out, 'tied.pt'))
    # where the saved values first differ, for the test to compare with the core's
    firsts = {}
    for a, b in (('ln.weight', 'ln.bias'), ('l2.bias', 'frozen.bias')):
        ne = (sd[a].reshape(-1) != sd[b].reshape(-1)).nonzero()
        firsts[b] = int(ne[0]) if len(ne) else None
    with open(os.path.join(out, 'firsts.json'), 'w') as f:
        json.dump(firsts, f)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
