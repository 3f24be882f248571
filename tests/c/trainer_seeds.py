"""A Hugging Face Trainer's training_args.bin and trainer_state.json for tests/c/test_trainer.c.

transformers is not imported: a stand-in package on sys.path defines what its pickle names, the
way transformers does (TrainingArguments a dataclass in transformers.training_args, pickled with
its __dict__ as BUILD state; OptimizerNames there and SchedulerType in transformers.trainer_utils,
str-valued Enums pickled as a REDUCE of the class with the value). Each FILE.bin gets FILE.expected
(what torch.load reads back: class, optim, kind, the numbers as float.hex) or FILE.error (the
text, then the error's file offset), each trainer_state JSON a .expected of its learning rates by
step (as float.hex). Usage: python3 trainer_seeds.py DIR"""
import dataclasses
import json
import os
import pickle
import pickletools
import struct
import sys
import tempfile
import zipfile

import torch

out = sys.argv[1]
os.makedirs(out, exist_ok=True)

pkg = tempfile.mkdtemp()
os.makedirs(os.path.join(pkg, 'transformers', 'utils'))
files = {
    '__init__.py': '',
    'utils/__init__.py': 'from .generic import ExplicitEnum\n',
    'utils/generic.py': '''
from enum import Enum
class ExplicitEnum(str, Enum):
    @classmethod
    def _missing_(cls, value):
        raise ValueError(f"{value} is not a valid {cls.__name__}")
''',
    'trainer_utils.py': '''
from .utils import ExplicitEnum
class SchedulerType(ExplicitEnum):
    LINEAR = "linear"
    COSINE = "cosine"
class IntervalStrategy(ExplicitEnum):
    NO = "no"
    STEPS = "steps"
''',
    'training_args.py': '''
from dataclasses import dataclass, field
from typing import Optional, Union
from .trainer_utils import IntervalStrategy, SchedulerType
from .utils import ExplicitEnum
class OptimizerNames(ExplicitEnum):
    ADAMW_TORCH = "adamw_torch"
    ADAMW_TORCH_FUSED = "adamw_torch_fused"
    ADAMW_HF = "adamw_hf"
    ADAFACTOR = "adafactor"
    SGD = "sgd"
    PAGED_ADAMW = "paged_adamw_32bit"
@dataclass
class TrainingArguments:
    output_dir: str = "trainer_output"
    per_device_train_batch_size: int = 8
    learning_rate: float = 5e-5
    weight_decay: float = 0.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-8
    max_grad_norm: float = 1.0
    lr_scheduler_type: Union[SchedulerType, str] = "linear"
    logging_strategy: Union[IntervalStrategy, str] = "steps"
    optim: Union[OptimizerNames, str] = "adamw_torch"
    report_to: Optional[list] = None
    def __post_init__(self):
        self.lr_scheduler_type = SchedulerType(self.lr_scheduler_type)
        self.logging_strategy = IntervalStrategy(self.logging_strategy)
        self.optim = OptimizerNames(self.optim)
        self._n_gpu = 0
''',
}
for name, text in files.items():
    with open(os.path.join(pkg, 'transformers', name), 'w') as f:
        f.write(text)
sys.path.insert(0, pkg)
from transformers.training_args import OptimizerNames, TrainingArguments  # noqa: E402


def hexf(x):
    return float(x).hex()


def expected(path, obj):
    state = obj if isinstance(obj, dict) else obj.__dict__
    cls = '-' if isinstance(obj, dict) else f'{type(obj).__module__}.{type(obj).__qualname__}'
    optim = state.get('optim')
    optim = '-' if optim is None else (optim.value if isinstance(optim, OptimizerNames) else optim)
    kind = 'adamw' if optim != '-' and optim.startswith('adamw') else 'unknown'
    lines = [f'class {cls}', f'optim {optim}', f'kind {kind}']
    for k in ('learning_rate', 'weight_decay', 'adam_beta1', 'adam_beta2', 'adam_epsilon'):
        lines.append(f'{k} {hexf(state[k]) if state.get(k) is not None else "-"}')
    with open(path + '.expected', 'w') as f:
        f.write('\n'.join(lines) + '\n')


def save(name, obj, legacy=False):
    path = os.path.join(out, name)
    torch.save(obj, path, _use_new_zipfile_serialization=not legacy)
    expected(path, torch.load(path))  # what Python reads back (transformers' classes stand in)
    return path


# the Trainer's own: an enum optim, zip and legacy
save('adamw.bin', TrainingArguments(output_dir='out', learning_rate=3e-4, weight_decay=0.01, adam_beta2=0.95,
                                    adam_epsilon=1e-6))
save('adamw-legacy.bin', TrainingArguments(learning_rate=1e-3, optim='adamw_torch_fused'), legacy=True)
save('adafactor.bin', TrainingArguments(optim='adafactor', learning_rate=1e-2))
# Python 3.11 on pickles an enum member by name (getattr(OptimizerNames, 'PAGED_ADAMW')), whose
# value is not the name in lower case
save('paged.bin', TrainingArguments(optim='paged_adamw_32bit'))
# Python before 3.11 pickles it as a REDUCE of the class with its value
by_name = OptimizerNames.__reduce_ex__
OptimizerNames.__reduce_ex__ = lambda self, proto: (self.__class__, (self._value_,))
save('by-value.bin', TrainingArguments(optim='adamw_torch_fused'))
save('by-value-legacy.bin', TrainingArguments(optim='sgd'), legacy=True)
OptimizerNames.__reduce_ex__ = by_name
# optim as a plain str (set after __post_init__), an int learning rate, a field None
a = TrainingArguments()
a.optim, a.learning_rate, a.adam_epsilon = 'adamw_hf', 2, None
save('str-optim.bin', a)
# TrainingArguments.to_dict() saved: a dict, not an object
d = dataclasses.asdict(TrainingArguments(optim='sgd'))
d['optim'] = d['optim'].value
save('dict.bin', d)


def object_pickle(path):
    """The object pickle's bytes, where they start in the file, and its member's name in texts."""
    with open(path, 'rb') as f:
        data = f.read()
    if data[:4] == b'PK\x03\x04':
        with zipfile.ZipFile(path) as z:
            info = next(i for i in z.infolist() if i.filename.endswith('/data.pkl'))
            n, e = struct.unpack('<HH', data[info.header_offset + 26:info.header_offset + 30])
            at = info.header_offset + 30 + n + e
            return data[at:at + info.file_size], at, info.filename, 0
    f = __import__('io').BytesIO(data)
    for _ in range(3):
        pickle.load(f)
    start = f.tell()
    return data[start:], start, os.path.basename(path), start


def error(name, obj, field, why, legacy=False):
    """A file whose `field` (or the object itself, field None) the reader refuses: the text
    and the file offset of the value's opcode, found with pickletools."""
    path = os.path.join(out, name)
    torch.save(obj, path, _use_new_zipfile_serialization=not legacy)
    pkl, at, member, origin = object_pickle(path)
    ops = list(pickletools.genops(pkl))
    if field is None:
        pos = next(p for op, _, p in ops if op.name not in ('PROTO', 'FRAME'))  # the root's first opcode
        what = 'the object'
    else:
        k = next(j for j, (op, arg, _) in enumerate(ops) if arg == field)
        k += 1
        while ops[k][0].name in ('BINPUT', 'LONG_BINPUT', 'MEMOIZE'):
            k += 1
        # a value that is a REDUCE: its text names the REDUCE, the last opcode of the value
        if ops[k][0].name == 'GLOBAL':
            k = next(j for j in range(k, len(ops)) if ops[j][0].name == 'REDUCE')
        pos = ops[k][2]
        what = field
    with open(path + '.error', 'w') as f:
        f.write(f'training_args.bin: {what} at byte {pos + origin} of {json.dumps(member)} {why}\n{at + pos}\n')


b = TrainingArguments()
b.learning_rate = 'fast'
error('bad-lr.bin', b, 'learning_rate', 'is not a number')
b = TrainingArguments()
b.optim = 7
error('bad-optim.bin', b, 'optim', 'is neither a str nor an enum whose value is a str', legacy=True)
error('list.bin', [1, 2], None, 'is not a dataclass with its fields as state (a TrainingArguments)')


# trainer_state.json as TrainerState.save_to_json writes it (json.dumps, indent 2, sorted keys)
def state_file(name, state):
    with open(os.path.join(out, name), 'w') as f:
        f.write(json.dumps(state, indent=2, sort_keys=True) + '\n')
    lrs = {}
    for e in state.get('log_history') or []:
        if e.get('step') is not None and e.get('learning_rate') is not None:
            lrs[e['step']] = e['learning_rate']
    with open(os.path.join(out, name + '.expected'), 'w') as f:
        gs = state.get('global_step')
        f.write(f'global_step {"-" if gs is None else gs}\n')
        for step in sorted(lrs):
            f.write(f'lr {step} {hexf(lrs[step])}\n')


lr = 3e-4
logs = []
for step in range(10, 110, 10):
    lr_now = lr * (1 - step / 100) if step <= 100 else 0.0  # a linear decay: doubles of many digits
    logs.append({'epoch': step / 37, 'grad_norm': float('nan') if step == 50 else 1 / step, 'learning_rate': lr_now,
                 'loss': 2.0 - step / 1000, 'step': step})
    if step % 50 == 0:
        logs.append({'epoch': step / 37, 'eval_loss': 1.5, 'step': step})
logs.append({'epoch': 2.7, 'step': 100, 'total_flos': 1e15, 'train_loss': float('inf'), 'train_runtime': 1.25})
state_file('trainer_state.json', {'best_metric': None, 'epoch': 2.7, 'global_step': 100, 'is_hyper_param_search': False,
                                  'log_history': logs, 'logging_steps': 10, 'max_steps': 100, 'trial_name': None})
# a resumed run that logged step 20 twice: the later log holds
state_file('resumed.json', {'global_step': 30, 'log_history': [
    {'learning_rate': 1e-4, 'step': 10}, {'learning_rate': 9e-5, 'step': 20}, {'learning_rate': 8.5e-5, 'step': 20},
    {'learning_rate': 0.1 + 0.2, 'step': 30}]})
