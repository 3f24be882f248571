"""torch.save files that two readers read differently (format.md 10.1), made at test time, each
with what torch.load and Python's zipfile (another zip reader) find in it.

An Adam state dict is saved twice: A with lr 0.001, B with lr 0.5 (the same tensors, so the same
storage records serve both pickles). Each file below holds A's data.pkl and, somewhere another
reader looks, B's; facts.txt says, per file, the lr torch.load returns (or the exception it
raises) and the lr Python's zipfile finds in the data.pkl it reads (in a legacy file: the
pickles read in order). A file that does not start with a local header is no zip to torch.load
(its _is_zipfile reads the first four bytes): every zip here starts with one. Usage: torch_container_seeds.py DIR
"""
import io
import os
import pickle
import struct
import sys
import tarfile
import zipfile
import zlib

import torch

out = sys.argv[1]
os.makedirs(out, exist_ok=True)

torch.manual_seed(0)
model = torch.nn.Linear(3, 2)
opt = torch.optim.Adam(model.parameters(), lr=0.001)
model(torch.ones(1, 3)).sum().backward()
opt.step()


def saved(lr, **kw):
    for g in opt.param_groups:
        g['lr'] = lr
    b = io.BytesIO()
    torch.save(opt.state_dict(), b, **kw)
    return b.getvalue()


A, B = saved(0.001), saved(0.5)
with zipfile.ZipFile(io.BytesIO(A)) as z:
    members = [(i.filename, z.read(i)) for i in z.infolist()]
with zipfile.ZipFile(io.BytesIO(B)) as z:
    b_pkl = z.read('archive/data.pkl')
assert members[0][0] == 'archive/data.pkl'
A_PKL, REST = members[0][1], members[1:]


# ---- a zip written field by field: stored members, offsets as given ----

def local(name, data):
    n = name.encode()
    return struct.pack('<IHHHHHIIIHH', 0x04034b50, 20, 0, 0, 0, 0x21, zlib.crc32(data), len(data), len(data),
                       len(n), 0) + n + data


def central(name, data, offset):
    n = name.encode()
    return struct.pack('<IHHHHHHIIIHHHHHII', 0x02014b50, 20, 20, 0, 0, 0, 0x21, zlib.crc32(data), len(data),
                       len(data), len(n), 0, 0, 0, 0, 0, offset) + n


def end(count, size, offset, comment=b''):
    return struct.pack('<IHHHHIIH', 0x06054b50, 0, 0, count, count, size, offset, len(comment)) + comment


def end64(count, size, offset):
    return struct.pack('<IQHHIIQQQQ', 0x06064b50, 44, 45, 45, 0, 0, count, count, size, offset)


def locator(at):
    return struct.pack('<IIQI', 0x07064b50, 0, at, 1)


END64_CLASSIC = struct.pack('<IHHHHIIH', 0x06054b50, 0, 0, 0xffff, 0xffff, 0xffffffff, 0xffffffff, 0)


class Body:
    """Local headers laid out from `base` (the file's bytes before them), their offsets kept."""

    def __init__(self, base=b''):
        self.b = bytearray(base)
        self.at = {}

    def add(self, key, name, data):
        self.at[key] = len(self.b)
        self.b += local(name, data)

    def directory(self, entries, shift=0):
        """Central entries for (key, name, data), their offsets less `shift`."""
        return b''.join(central(n, d, self.at[k] - shift) for k, n, d in entries)


def with_rest(body):
    for n, d in REST:
        body.add(n, n, d)
    return [(n, n, d) for n, d in REST]


files = {}
where = {}  # the bytes the texts name, per file

# two members of one name: which one a reader takes is its own affair
body = Body()
body.add('a', 'archive/data.pkl', A_PKL)
body.add('b', 'archive/data.pkl', b_pkl)
rest = with_rest(body)
cd = body.directory([('a', 'archive/data.pkl', A_PKL), ('b', 'archive/data.pkl', b_pkl)] + rest)
files['same-name.pt'] = bytes(body.b) + cd + end(len(rest) + 2, len(cd), len(body.b))
where['same-name.pt'] = {'entry': len(body.b) + 46 + len('archive/data.pkl')}

# names equal but for case: torch.load looks names up without regard to it
body = Body()
body.add('a', 'archive/data.pkl', A_PKL)
body.add('b', 'archive/DATA.pkl', b_pkl)
rest = with_rest(body)
cd = body.directory([('a', 'archive/data.pkl', A_PKL), ('b', 'archive/DATA.pkl', b_pkl)] + rest)
files['same-name-case.pt'] = bytes(body.b) + cd + end(len(rest) + 2, len(cd), len(body.b))
where['same-name-case.pt'] = {'entry': len(body.b) + 46 + len('archive/data.pkl')}

# a directory where the end record says, and another one after it, ending at the end record
body = Body()
body.add('a', 'archive/data.pkl', A_PKL)
body.add('b', 'archive/data.pkl', b_pkl)
rest = with_rest(body)
cd1 = body.directory([('a', 'archive/data.pkl', A_PKL)] + rest)
# the second directory's offsets are less the first one's size: A's pickle leaves room for that
assert len(cd1) <= body.at['b']
cd2 = body.directory([('b', 'archive/data.pkl', b_pkl)] + rest, shift=len(cd1))
assert len(cd1) == len(cd2)
files['two-directories.pt'] = bytes(body.b) + cd1 + cd2 + end(len(rest) + 1, len(cd2), len(body.b))
where['two-directories.pt'] = {'stated': len(body.b), 'before': len(cd1), 'field': len(files['two-directories.pt']) - 6}

# two ZIP64 end records: the locator's, and another just before the locator
body = Body()
body.add('a', 'archive/data.pkl', A_PKL)
body.add('b', 'archive/data.pkl', b_pkl)
rest = with_rest(body)
cd1 = body.directory([('a', 'archive/data.pkl', A_PKL)] + rest)
cd2 = body.directory([('b', 'archive/data.pkl', b_pkl)] + rest)
c1 = len(body.b)
r1 = c1 + len(cd1)
c2 = r1 + 56
n = len(rest) + 1
files['two-zip64-records.pt'] = (bytes(body.b) + cd1 + end64(n, len(cd1), c1) + cd2 + end64(n, len(cd2), c2)
                                 + locator(r1) + END64_CLASSIC)
where['two-zip64-records.pt'] = {'target': r1, 'record': c2 + len(cd2), 'field': c2 + len(cd2) + 56 + 8}

# an end record in the comment of the end record: the last signature is another's choice
body = Body()
body.add('a', 'archive/data.pkl', A_PKL)
body.add('b', 'archive/data.pkl', b_pkl)
rest = with_rest(body)
cd1 = body.directory([('a', 'archive/data.pkl', A_PKL)] + rest)
cd2 = body.directory([('b', 'archive/data.pkl', b_pkl)] + rest)
c1 = len(body.b)
c2 = c1 + len(cd1)
inner = struct.pack('<IHHHHIIH', 0x06054b50, 0, 0, n, n, len(cd2), c2, 9)  # its comment would pass the end
files['end-record-in-comment.pt'] = bytes(body.b) + cd1 + cd2 + end(n, len(cd1), c1, inner)
where['end-record-in-comment.pt'] = {'end': c2 + len(cd2), 'last': c2 + len(cd2) + 22}

# a member outside the folder of the first one
body = Body()
body.add('v', 'archive/version', b'3\n')
body.add('b', 'other/data.pkl', b_pkl)
body.add('a', 'archive/data.pkl', A_PKL)
rest = with_rest(body)
cd = body.directory([('v', 'archive/version', b'3\n'), ('b', 'other/data.pkl', b_pkl),
                     ('a', 'archive/data.pkl', A_PKL)] + rest)
files['other-folder.pt'] = bytes(body.b) + cd + end(len(rest) + 3, len(cd), len(body.b))
where['other-folder.pt'] = {'entry': len(body.b) + 46 + len('archive/version')}

# the same, the first member's folder named with '%': the text gives the name as it is
body = Body()
body.add('v', '%p%s%n/version', b'3\n')
body.add('b', 'other/data.pkl', b_pkl)
body.add('a', 'archive/data.pkl', A_PKL)
rest = with_rest(body)
cd = body.directory([('v', '%p%s%n/version', b'3\n'), ('b', 'other/data.pkl', b_pkl),
                     ('a', 'archive/data.pkl', A_PKL)] + rest)
files['percent-folder.pt'] = bytes(body.b) + cd + end(len(rest) + 3, len(cd), len(body.b))
where['percent-folder.pt'] = {'entry': len(body.b) + 46 + len('%p%s%n/version')}

# torch.save records back to back, as torch.distributed.checkpoint writes a .distcp file
records = [saved(0.001), saved(0.25), saved(0.5)]
files['records.distcp'] = b''.join(records)
r64 = records[2].rindex(b'PK\x06\x06')  # torch writes ZIP64 end records
where['records.distcp'] = {'stated': struct.unpack_from('<Q', records[2], r64 + 48)[0],
                           'before': len(records[0]) + len(records[1]),
                           'field': len(records[0]) + len(records[1]) + r64 + 48}

# one record, named as DCP names a data file of one item (single_file_per_rank=False)
files['__0_3.distcp'] = saved(0.25)

# A after another archive (B), its offsets counted from byte 0: one directory for every reader
body = Body(B)
body.add('a', 'archive/data.pkl', A_PKL)
rest = with_rest(body)
cd = body.directory([('a', 'archive/data.pkl', A_PKL)] + rest)
files['after-another.pt'] = bytes(body.b) + cd + end(len(rest) + 1, len(cd), len(body.b))
where['after-another.pt'] = {'first': len(B), 'end': len(B) - 22}

# a legacy file whose first 512 bytes are also a tar header: sys_info carries a string that
# spans them with the header's fields and checksum
raw = saved(0.001, _use_new_zipfile_serialization=False)
f = io.BytesIO(raw)
pickle.load(f)
pickle.load(f)
a = f.tell()
sys_info = pickle.load(f)
b = f.tell()
PAD = 600


def with_pad(pad):
    d = {'pad': pad}
    d.update(sys_info)
    return pickle.dumps(d, protocol=2)


probe = with_pad('Q' * PAD)
pad_at = a + probe.index(b'Q' * PAD)
h = bytearray(512)
head = raw[:a] + probe[:pad_at - a]
h[:len(head)] = head
for at, text in [(100, b'0000644\0'), (108, b'0000000\0'), (116, b'0000000\0'), (124, b'00000000000\0'),
                 (136, b'00000000000\0'), (156, b'0'), (257, b'ustar\x0000'), (148, b' ' * 8)]:
    h[at:at + len(text)] = text
h[148:156] = b'%06o\0 ' % sum(h)
pad = bytes(h[pad_at:]).decode('ascii')
legacy = raw[:a] + with_pad(pad + 'x' * (PAD - len(pad))) + raw[b:]
assert legacy[:512] == bytes(h)
files['tar-header.pt'] = legacy

class Names(pickle.Unpickler):
    """A data.pkl read for its param_groups: storages and tensors stand in as None."""

    def persistent_load(self, pid):
        return None

    def find_class(self, module, name):
        if module.startswith('torch'):
            return lambda *args: None
        return super().find_class(module, name)


def lr_of(pkl):
    return repr(Names(io.BytesIO(pkl)).load()['param_groups'][0]['lr'])


facts = []
for name, data in files.items():
    path = os.path.join(out, name)
    with open(path, 'wb') as fh:
        fh.write(data)
    try:
        got = torch.load(path)
        torch_reads = repr(got['param_groups'][0]['lr'])
    except Exception as e:  # what torch.load says instead
        torch_reads = type(e).__name__
    if name == 'tar-header.pt':
        g = io.BytesIO(data)
        for _ in range(3):
            pickle.load(g)
        other = repr(Names(g).load()['param_groups'][0]['lr'])  # the pickles, read in order
        assert tarfile.is_tarfile(path)
    else:
        try:
            with zipfile.ZipFile(path) as z:  # its data.pkl: the last of that name, as zipfile keeps it
                other = lr_of(z.read('archive/data.pkl'))
        except Exception as e:
            other = type(e).__name__
    numbers = ''.join(f' {k}={v}' for k, v in where.get(name, {}).items())
    facts.append(f'{name} torch={torch_reads} other={other}{numbers}')
with open(os.path.join(out, 'facts.txt'), 'w') as fh:
    fh.write('\n'.join(facts) + '\n')
