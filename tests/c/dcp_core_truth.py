"""The DCP reader's tensors against an independent reading (format.md 12.3): test_dcp --cases
exports every valid folder of tests/cases/dcp.json (each slot's moments and values, streamed run by
run from its chunks' records) to WORK/{name}.safetensors; here each exported tensor's bytes must
hash to what tests/c/dcp_truth.py gives for its key (the full row-major bytes reassembled by
torch.load of every record's window).

usage: dcp_core_truth.py CASES WORK
"""
import hashlib
import json
import os
import re
import struct
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dcp_truth  # noqa: E402


def tensors(path):
    with open(path, 'rb') as f:
        data = f.read()
    n = struct.unpack('<Q', data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    return {k: body[v['data_offsets'][0]:v['data_offsets'][1]] for k, v in header.items() if k != '__metadata__'}


def form_i_ids():
    """form I's ids as the writer gave them (dcp_seeds.form_i): the trainable FQNs in its groups'
    order, numbered from 0"""
    import dcp_seeds
    _, trainable, _ = dcp_seeds.base_sd()
    return {fqn: i for i, fqn in enumerate(trainable)}


def key_of(keys, name, ids=None):
    """the key of an exported name: {fqn}.exp_avg[_sq] is a state key ending in state.{fqn}.{key}
    (form I: state.{id}.{key}, ids from the writer); {fqn} the model's key (bare, or under a prefix)"""
    for suffix in ('.exp_avg_sq', '.exp_avg'):
        if name.endswith(suffix):
            fqn = name[:-len(suffix)]
            if ids is not None:
                fqn = ids.get(fqn, fqn)
            hits = [k for k in keys if k.endswith(f'state.{fqn}{suffix}')]
            return hits[0] if len(hits) == 1 else None
    hits = [k for k in keys if (k == name or k.endswith('.' + name)) and '.state.' not in k and not k.startswith('state.')]
    return hits[0] if len(hits) == 1 else None


def main():
    cases, work = sys.argv[1], sys.argv[2]
    checked = folders = 0
    for name in sorted(os.listdir(work)):
        if not name.endswith('.safetensors'):
            continue
        folder = name[:-len('.safetensors')]
        path = os.path.join(cases, folder)
        if not os.path.isdir(path):  # Accelerate's two folders: accelerate-{part}
            base, _, part = folder.partition('-')
            path = os.path.join(cases, base, part)
        truth = {k['key']: k for k in dcp_truth.truth(path)['keys']}
        got = tensors(os.path.join(work, name))
        folders += 1
        # form I keys its state by ids: the exported FQNs are the core's positional placing
        ids = form_i_ids() if any(re.search(r'(^|\.)state\.\d+\.', k) for k in truth) else None
        for tname, raw in got.items():
            key = key_of(truth, tname, ids)
            if key is None:
                raise SystemExit(f'{folder}: {tname} is no key of the folder')
            want = truth[key]['sha256']
            if hashlib.sha256(raw).hexdigest() != want:
                raise SystemExit(f'{folder}: {tname} ({key}) differs from the records reassembled')
            checked += 1
    if folders < 8 or checked < 50:
        raise SystemExit(f'only {checked} tensors of {folders} folders exported')
    print(f'{checked} tensors of {folders} folders equal to the records reassembled')


if __name__ == '__main__':
    main()
