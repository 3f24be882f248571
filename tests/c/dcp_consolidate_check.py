"""DCP folders converted to a consolidated torch.optim state dict and its model (format.md 12.8),
checked with torch 1.13 against dcp_truth.py's independent reassembly of the records.

`python3 dcp_consolidate_check.py --files DIR OPTIMIZER.pt MODEL.pt` checks files written by the CLI.
`python3 dcp_consolidate_check.py TOOL FIXTURE CASES OUT`: TOOL is dcp_consolidate_tool (the core's
conversion as a command), FIXTURE tests/fixtures/dcp-torch113, CASES the folders dcp_seeds.py
wrote. For each converted folder: both files torch.load; the optimizer is {'state',
'param_groups'} in that order; ids number the groups in stored order, each group's names in
module order (planner_data's walk, else the 1.13 metadata order); every tensor (model values,
state) bit for bit the reassembled key, in its stored dtype; group values and their key order as
stored, params last; a slot without state whose values equal an earlier owner's shares its
storage; torch.optim.Adam(groups).load_state_dict(opt) takes the file. The refusals: their exact
texts."""
import hashlib
import io
import os
import shutil
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dcp_truth  # noqa: E402

# Accelerate's checkpoint_{k} (its two folders read as one), and optimizer_0/ with its model part beside it
CONVERTED = ['n', 'n23-old', 'n23', 'f', 'w8', 'bf16', 'cols', 'blocks', 'torch113', 'prefix-app', 'ddp-dedup',
             'records-main', 'accelerate', 'accelerate/optimizer_0']
REFUSED = {
    'no-planner-data': 'DCP: ckpt keeps no module order (no planner_data): give --names NAMES.json to number '
                       'the parameters',
    'optimizer_0': 'DCP: ckpt holds optimizer state but no model part: give --state MODEL (a torch.save '
                   'state dict, a safetensors file or the model\'s DCP folder)',
}
failures = []


def fail(msg):
    failures.append(msg)
    print('FAIL', msg)


def sha(t):
    return hashlib.sha256(dcp_truth.row_major_bytes(t)).hexdigest()


def bytes_value(folder, entry):
    sub, name = os.path.split(entry['file'])  # a file of one of Accelerate's two folders: inside it
    data = dcp_truth.window(os.path.join(folder, sub), {'relative_path': name, 'offset': entry['offset'],
                                                        'length': entry['length']})
    return torch.load(io.BytesIO(data), map_location='cpu')


def two_groups(out):
    """Hugging Face's decay/no-decay groups, the decay group's list stored the module the other way
    round: its warning, and ids in module order."""
    import dcp_seeds
    model, trainable, osd = dcp_seeds.base_sd()
    g0 = osd['param_groups'][0]
    decay = [n for n in trainable if n.endswith('weight')][::-1]
    rest = [n for n in trainable if not n.endswith('weight')]
    osd['param_groups'] = [dict(g0, params=decay), dict(g0, weight_decay=0.0, params=rest)]
    folder = os.path.join(out, 'two-groups')
    os.makedirs(folder, exist_ok=True)
    dcp_seeds.write(folder, dcp_seeds.nested(model, osd))
    want = ('["DCP: group 0 lists %s before %s, the module the other way round: numbered in module order '
            '(--group-order stored keeps the list)"]' % (decay[0], decay[1]))
    return folder, want


def check(name, folder, out, warnings='[]'):
    stem = os.path.join(out, name.replace('/', '-'))
    opt_path, model_path = stem + '.optimizer.pt', stem + '.model.pt'
    r = subprocess.run([TOOL, folder, opt_path, model_path], capture_output=True, text=True)
    if r.returncode != 0:
        return fail(f'{name}: not converted: {r.stdout.strip()} {r.stderr.strip()}')
    if r.stdout.strip() != warnings:
        fail(f'{name}: warnings {r.stdout.strip()}, expected {warnings}')
    verify(name, folder, opt_path, model_path)


def verify(name, folder, opt_path, model_path):
    tr = dcp_truth.truth(folder)
    keys = {k['key']: k for k in tr['keys']}
    order = list(tr['plannerData']) if tr['plannerData'] else [k['key'] for k in tr['keys']]
    order += [k['key'] for k in tr['keys'] if k['key'] not in order]
    opt = torch.load(opt_path, map_location='cpu')
    model = torch.load(model_path, map_location='cpu')
    if list(opt) != ['state', 'param_groups']:
        fail(f'{name}: optimizer keys {list(opt)}')
    # the model part: its prefix, names in module order
    prefix = next((p for p in ('model.', 'app.model.') if all(
        k.startswith(p) for k in order if keys[k]['kind'] == 'tensor' and '.state.' not in k and
        'param_groups' not in k)), '')
    opt_root = next(k.split('state.')[0] for k in order if '.state.' in k or k.startswith('state.'))
    # without a prefix the model part is the tensor keys outside the optimizer (12.2)
    mnames = [k[len(prefix):] for k in order if k.startswith(prefix) and not k.startswith(opt_root)
              and (prefix or keys[k]['kind'] == 'tensor')]
    if list(model) != mnames:
        fail(f'{name}: model keys {list(model)} != {mnames}')
    for m in mnames:
        k = keys[prefix + m]
        if k['kind'] == 'tensor' and (sha(model[m]) != k['sha256'] or str(model[m].dtype) != k['dtype']):
            fail(f'{name}: model {m} differs from the records')
    # stored groups: their names and values
    groups = []
    pg = [k for k in order if k.startswith(opt_root + 'param_groups')]
    if opt_root + 'param_groups' in keys:  # N23: one bytes item, the whole list
        stored = bytes_value(folder, keys[opt_root + 'param_groups']['entry'])
        groups = [(list(g['params']), [(a, v) for a, v in g.items() if a != 'params']) for g in stored]
    elif any(k[len(opt_root + 'param_groups.'):].split('.')[0].isdigit() for k in pg):  # N
        n = 1 + max(int(k[len(opt_root + 'param_groups.'):].split('.')[0]) for k in pg)
        for g in range(n):
            head = f'{opt_root}param_groups.{g}.'
            vals = [(k[len(head):], bytes_value(folder, keys[k]['entry'])) for k in pg if k.startswith(head)]
            groups.append(([v for a, v in vals if a == 'params'][0], [(a, v) for a, v in vals if a != 'params']))
    else:  # F: per name; equal values form one group (these seeds hold one)
        stateful = [m for m in mnames if any(k.startswith(f'{opt_root}state.{m}.') for k in order)]
        head = f'{opt_root}param_groups.{stateful[0]}.'
        groups = [(stateful, [(k[len(head):], bytes_value(folder, keys[k]['entry'])) for k in pg
                              if k.startswith(head)])]
    want_ids = []
    for names, _ in groups:
        want_ids += sorted((n for n in names if n in mnames), key=mnames.index)
    if len(opt['param_groups']) != len(groups):
        fail(f'{name}: {len(opt["param_groups"])} groups, {len(groups)} stored')
    at = 0
    for g, (names, vals) in enumerate(groups):
        got = opt['param_groups'][g]
        n = len([x for x in names if x in mnames])
        if list(got) != [a for a, _ in vals] + ['params'] or got['params'] != list(range(at, at + n)):
            fail(f'{name}: group {g} keys {list(got)} params {got["params"]}')
        for a, v in vals:
            if type(got[a]) is not type(v) or repr(got[a]) != repr(v):
                fail(f'{name}: group {g} {a} = {got[a]!r}, stored {v!r}')
        at += n
    # state: per id, the keys in planner order, values bit for bit
    for i, m in enumerate(want_ids):
        skeys = [k for k in order if k.startswith(f'{opt_root}state.{m}.')]
        if not skeys:
            if i in opt['state']:
                fail(f'{name}: id {i} ({m}) has state it does not store')
            continue
        st = opt['state'].get(i)
        if st is None or list(st) != [k[len(f'{opt_root}state.{m}.'):] for k in skeys]:
            fail(f'{name}: id {i} ({m}) state {None if st is None else list(st)}')
            continue
        for k in skeys:
            v = st[k[len(f'{opt_root}state.{m}.'):]]
            if keys[k]['kind'] == 'tensor':
                if sha(v) != keys[k]['sha256'] or str(v.dtype) != keys[k]['dtype'] or list(v.shape) != keys[k]['shape']:
                    fail(f'{name}: {k} differs from the records')
            elif repr(v) != repr(bytes_value(folder, keys[k]['entry'])):
                fail(f'{name}: {k} = {v!r} differs from the record')
    if sorted(opt['state']) != sorted(i for i, m in enumerate(want_ids)
                                      if any(k.startswith(f'{opt_root}state.{m}.') for k in order)):
        fail(f'{name}: state ids {sorted(opt["state"])}')
    # ties: a slot without state equal to an earlier owner with state shares its storage
    owners = [m for m in mnames if m in want_ids and (want_ids.index(m) in opt['state'])]
    for j, m in enumerate(mnames):
        if m in owners or not model[m].is_floating_point():
            continue
        for o in owners:
            if mnames.index(o) < j and model[o].shape == model[m].shape and model[o].dtype == model[m].dtype \
                    and torch.equal(model[o], model[m]):
                if model[o].storage().data_ptr() != model[m].storage().data_ptr():
                    fail(f'{name}: {m} equals {o} but is not its storage')
                break
    # torch.optim takes it
    params = [{'params': [torch.nn.Parameter(model[x].float().clone())
                          for x in sorted((n for n in names if n in mnames), key=mnames.index)]}
              for names, _ in groups]
    try:
        torch.optim.Adam(params).load_state_dict(opt)
    except Exception as e:  # noqa: BLE001
        fail(f'{name}: Adam.load_state_dict: {e}')
    print(f'{name}: {len(want_ids)} ids, {len(opt["state"])} with state, {len(groups)} groups, '
          f'{len(model)} model keys')


def refused(name, folder, out, text):
    stem = os.path.join(out, name.replace('/', '-'))
    opt_path, model_path = stem + '.optimizer.pt', stem + '.model.pt'
    r = subprocess.run([TOOL, folder, opt_path, model_path], capture_output=True, text=True)
    code, _, msg = r.stdout.strip().partition(' ')
    if r.returncode != 2 or msg != text:
        fail(f'{name}: expected the refusal {text!r}, got {r.returncode} {r.stdout.strip()!r}')
    else:
        print(f'{name}: refused ({code}): {msg}')


if __name__ == '__main__':
    if sys.argv[1] == '--files':  # files written by the CLI: DIR OPTIMIZER.pt MODEL.pt
        verify('files', *sys.argv[2:5])
        sys.exit(1 if failures else 0)
    TOOL, FIXTURE, CASES, OUT = sys.argv[1:5]
    os.makedirs(OUT, exist_ok=True)
    check('fixture', FIXTURE, OUT)
    for c in CONVERTED:
        check(c, os.path.join(CASES, c), OUT)
    folder, want = two_groups(OUT)
    check('two-groups', folder, OUT, want)
    # optimizer_0/ with no model part beside it: a copy alone
    alone = os.path.join(OUT, 'alone', 'optimizer_0')
    shutil.rmtree(os.path.dirname(alone), ignore_errors=True)
    shutil.copytree(os.path.join(CASES, 'accelerate', 'optimizer_0'), alone)
    for c, text in REFUSED.items():
        refused(c, alone if c == 'optimizer_0' else os.path.join(CASES, c), OUT, text)
    if failures:
        print(f'{len(failures)} failures')
        sys.exit(1)
    print('ok')
