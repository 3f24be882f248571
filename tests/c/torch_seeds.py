"""Seed files from the real torch.save, for tests/c/test_torch_files.c: an Adam optimizer's
state_dict saved as a zip and in the legacy format (_use_new_zipfile_serialization=False), and
what Python's own readers see in them (facts.txt), which the native reader must see too; the same
state_dict with its groups saying decoupled_weight_decay False (Adam, as torch >= 2.x writes it:
optimizer-said.pt), for the kind a file says.
Usage: python3 torch_seeds.py DIR"""
import io
import os
import pickle
import sys
import zipfile

import torch

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
model(torch.randn(4, 3)).sum().backward()
opt.step()
zip_path = os.path.join(out, 'optimizer.pt')
legacy_path = os.path.join(out, 'optimizer-legacy.pt')
torch.save(opt.state_dict(), zip_path)
torch.save(opt.state_dict(), legacy_path, _use_new_zipfile_serialization=False)
said = opt.state_dict()
for g in said['param_groups']:
    g['decoupled_weight_decay'] = False
torch.save(said, os.path.join(out, 'optimizer-said.pt'))


class Recorder(pickle.Unpickler):
    """Reads the pickle as data: names become strings, persistent ids are recorded, nothing runs."""

    def __init__(self, f):
        super().__init__(f)
        self.pids = []

    def find_class(self, module, name):
        full = f'{module}.{name}'
        if full == 'collections.OrderedDict':
            return dict
        return lambda *args: (full, args)

    def persistent_load(self, pid):
        self.pids.append(pid)
        return pid


facts = []
with zipfile.ZipFile(zip_path) as z:
    for info in z.infolist():
        facts.append(f'member {info.filename} {info.compress_type} {info.file_size}')
    prefix = z.infolist()[0].filename.split('/')[0]
    r = Recorder(io.BytesIO(z.read(f'{prefix}/data.pkl')))
    r.load()
    for pid in r.pids:
        facts.append(f'persid {pid[0]} {pid[1]("x")[0]} {pid[2]} {pid[3]} {pid[4]}')

with open(legacy_path, 'rb') as f:
    data = f.read()
f = io.BytesIO(data)
magic = pickle.load(f)
facts.append(f'legacy magic {magic:#x} protocol {pickle.load(f)}')
pickle.load(f)  # sys_info
r = Recorder(f)
r.load()
keys = pickle.load(f)
facts.append(f'legacy pickles-end {f.tell()} keys {" ".join(keys)}')
for pid in r.pids:
    facts.append(f'legacy-persid {pid[0]} {pid[1]("x")[0]} {pid[2]} {pid[3]} {pid[4]} {pid[5]}')
with open(os.path.join(out, 'facts.txt'), 'w') as f:
    f.write('\n'.join(facts) + '\n')
