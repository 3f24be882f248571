"""Reads DeepSpeed exports (safetensors by its layout, .npz as a zip of .npy files; no NumPy) and
compares every tensor with the seed script's independent reconstruction (raw little-endian
float32, bit for bit) and with truth.pt (a single-process AdamW run: the largest difference).
Prints JSON per export: its tensors, how many equal the reconstruction bit for bit, the largest
difference from the truth, and the metadata's tensors, steps and names.
Usage: deepspeed_export_check.py MANIFEST TRUTH CASE=EXPORT ..."""
import ast
import json
import math
import struct
import sys
import zipfile

import torch


def read_safetensors(path):
    with open(path, 'rb') as f:
        (n,) = struct.unpack('<Q', f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop('__metadata__', {})
    out = {}
    for name, t in header.items():
        assert t['dtype'] == 'F32'
        begin, end = t['data_offsets']
        out[name] = (data[begin:end], t['shape'])
    return out, meta


def npy(b):
    """A .npy 1.0 file: (its data, its header's dict)"""
    assert b[:6] == b'\x93NUMPY' and b[6] == 1
    (n,) = struct.unpack('<H', b[8:10])
    return b[10 + n:], ast.literal_eval(b[10:10 + n].decode('latin1'))


def read_npz(path):
    out = {}
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            data, head = npy(z.read(info))
            if info.filename == '__metadata__.npy':
                meta = json.loads(data.decode('utf-32-le').rstrip('\0'))
                continue
            assert head['descr'] == '<f4' and not head['fortran_order']
            out[info.filename[:-4]] = (data, list(head['shape']))
    return out, meta


manifest = json.load(open(sys.argv[1]))
cases = {c['name']: c for c in manifest['cases']}
truth = torch.load(sys.argv[2])
result = {}
for arg in sys.argv[3:]:
    name, path = arg.split('=', 1)
    case = cases[name]
    tensors, meta = read_safetensors(path) if path.endswith('.safetensors') else read_npz(path)
    same, worst, compared = 0, 0.0, 0
    for param, e in case['values'].items():
        for key, raw in e['keys'].items():
            data, shape = tensors[param if key == 'fp32' else f'{param}.{key}']
            want = open(raw, 'rb').read()
            compared += 1
            same += shape == e['shape'] and data == want
            got = torch.frombuffer(bytearray(data), dtype=torch.float32).double().view(e['shape'])
            t = truth['weights'][param] if key == 'fp32' else truth['state'][param][key]
            worst = max(worst, float((got - t.double()).abs().max()))
    result[name + ':' + path.rsplit('.', 1)[1]] = {
        'tensors': sorted(tensors), 'compared': compared, 'same': same, 'worst': worst,
        'what': json.loads(meta['tensors']), 'steps': json.loads(meta['steps']), 'names': json.loads(meta['names']),
        'family': meta['family']}
print(json.dumps(result))
