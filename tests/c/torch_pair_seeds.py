"""PyTorch optimizers and their models, made by torch for the pairing tests (format.md 10.4).

python3 torch_pair_seeds.py DIR writes into DIR:
  lm.opt.pt, lm.model.bin       a GPT-like model (tied lm_head, a float buffer), AdamW in
                                Hugging Face's decay / no-decay groups, three steps
  lm.both.pt                    {'model': ..., 'optimizer': ...} of the same
  lm.resized.bin                the same model with a larger vocabulary (wte resized)
  lm.reordered.bin              block 0's modules in another order
  lm.small.bin                  one block fewer (more optimizer parameters than the model has)
  lm.model.safetensors          the model as save_pretrained writes it (sorted, tied copy dropped)
  lm.names.json                 list(model.state_dict()), the names in module order
  cnn.opt.pt, cnn.model.bin     a CNN with BatchNorm, its first conv frozen, Adam(amsgrad) over
                                the trainable parameters in one group
  twin.opt.pt, twin.model.bin   two same-shaped layers, one frozen: which one is ambiguous
  named.opt.pt                  lm's optimizer with param_names saved in its groups
  named.renamed.bin             lm's model with a module renamed
  mlp.opt.pt, mlp.model.bin     Adam(model.parameters()): one group of every parameter
  mlp.swapped.bin               its two layers registered in the other order
  rt.opt.pt, rt.model.bin       AdamW(model.parameters(), weight_decay=0.01) on the GPT-like model
                                (decoupled_weight_decay unsaid), for the round trip through TorchLean;
                                rt.both.pt the two in one file; rt4.* one step later
  bf16.opt.pt, bf16.model.bin   Adam on a bfloat16 MLP: bfloat16 moments
  lm.keepvars.bin               lm's model as state_dict(keep_vars=True): Parameters, and the
                                buffer as a plain tensor
  rt.untied.bin                 rt's model with lm_head untied (a Parameter of its own)
  cnn.ckpt                      a Lightning-style file holding the CNN and its optimizer
  gpt/checkpoint-20/            a Trainer folder: optimizer.pt (AdamW, decay / no-decay groups) of
                                a GPT-like model (vocab 50, width 16, lm_head tied to wte) and
                                that model as pytorch_model.bin
  gpt/st/checkpoint-20/         the same optimizer.pt beside the model as model.safetensors
  gpt/untied.bin                the same model with lm_head untied
  gpt/resized.bin               the same model with a vocabulary of 58
  facts.json                    what torch itself says of them
"""
import json
import os
import struct
import sys

import torch
import torch.nn as nn

class Block(nn.Module):
    def __init__(self, d, swapped=False):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        if swapped:  # the same modules, registered in another order
            self.proj = nn.Linear(2 * d, d)
            self.fc = nn.Linear(d, 2 * d)
        else:
            self.fc = nn.Linear(d, 2 * d)
            self.proj = nn.Linear(2 * d, d)

    def forward(self, x):
        return x + self.proj(torch.relu(self.fc(self.ln(x))))


class LM(nn.Module):
    def __init__(self, vocab=11, d=4, layers=2, swapped=False, rename=False):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(7, d)
        self.h = nn.ModuleList([Block(d, swapped and i == 0) for i in range(layers)])
        if rename:
            self.final_norm = nn.LayerNorm(d)
        else:
            self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied
        self.register_buffer('mask', torch.ones(3))

    def forward(self, i):
        x = self.wte(i) + self.wpe(torch.arange(i.shape[1]))
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))


def write_safetensors(path, state_dict, drop=()):
    tensors = {n: t for n, t in state_dict.items() if n not in drop}
    header, blob = {}, b''
    for n in sorted(tensors):
        raw = tensors[n].contiguous().numpy().tobytes()
        header[n] = {'dtype': 'F32', 'shape': list(tensors[n].shape), 'data_offsets': [len(blob), len(blob) + len(raw)]}
        blob += raw
    text = json.dumps(header, separators=(',', ':')).encode()
    text += b' ' * (-len(text) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(text)) + text + blob)


def train(model, opt, batch, steps=3):
    for _ in range(steps):
        opt.zero_grad()
        model(batch()).sum().backward()
        opt.step()



if __name__ == '__main__':
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    at = lambda name: os.path.join(out, name)


    facts = {}

    # the GPT-like run: Hugging Face's groups (decay: weights but LayerNorm's; no decay: the rest)
    lm = LM()
    decay = [n for n, p in lm.named_parameters() if n.endswith('weight') and 'ln' not in n]
    groups = [{'params': [p for n, p in lm.named_parameters() if n in decay], 'weight_decay': 0.1},
              {'params': [p for n, p in lm.named_parameters() if n not in decay], 'weight_decay': 0.0}]
    opt = torch.optim.AdamW(groups, lr=1e-3, betas=(0.9, 0.95))
    train(lm, opt, lambda: torch.randint(0, 11, (2, 5)))
    torch.save(opt.state_dict(), at('lm.opt.pt'))
    torch.save(lm.state_dict(), at('lm.model.bin'))
    torch.save({'model': lm.state_dict(), 'optimizer': opt.state_dict()}, at('lm.both.pt'))
    torch.save(LM(vocab=13).state_dict(), at('lm.resized.bin'))
    torch.save(LM(swapped=True).state_dict(), at('lm.reordered.bin'))
    torch.save(LM(layers=1).state_dict(), at('lm.small.bin'))
    with open(at('lm.names.json'), 'w') as f:
        json.dump(list(lm.state_dict()), f)
    names_by_index = [n for g in [decay, [n for n, _ in lm.named_parameters() if n not in decay]] for n in g]
    facts['lm'] = {'names': list(lm.state_dict()), 'byIndex': names_by_index}
    sd = opt.state_dict()
    facts['lm']['exp_avg'] = {str(i): s['exp_avg'].flatten().tolist() for i, s in sd['state'].items()}

    # safetensors as save_pretrained writes it: the tied copy dropped, sorted by name, F32
    write_safetensors(at('lm.model.safetensors'), lm.state_dict(), drop=['lm_head.weight'])

    # param_names in the groups (what torch >= 2.5 saves for named parameters), and a renamed model
    named = opt.state_dict()
    names_of = [decay, [n for n, _ in lm.named_parameters() if n not in decay]]
    for g, ns in zip(named['param_groups'], names_of):
        g['param_names'] = list(ns)
    torch.save(named, at('named.opt.pt'))
    torch.save(LM(rename=True).state_dict(), at('named.renamed.bin'))


    # a CNN: BatchNorm (its buffers are no slots), the first conv frozen, amsgrad, one group
    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 2, 3)
            self.bn1 = nn.BatchNorm2d(2)
            self.conv2 = nn.Conv2d(2, 3, 3)
            self.head = nn.Linear(3, 2)

        def forward(self, x):
            x = self.conv2(torch.relu(self.bn1(self.conv1(x))))
            return self.head(x.mean((2, 3)))


    cnn = CNN()
    cnn.conv1.requires_grad_(False)
    copt = torch.optim.Adam([p for p in cnn.parameters() if p.requires_grad], lr=2e-3, betas=(0.9, 0.6), amsgrad=True)
    train(cnn, copt, lambda: torch.randn(2, 1, 7, 7))
    train(cnn, copt, lambda: 0.01 * torch.randn(2, 1, 7, 7), steps=4)  # smaller gradients: v falls below its maximum
    torch.save(copt.state_dict(), at('cnn.opt.pt'))
    torch.save(cnn.state_dict(), at('cnn.model.bin'))
    facts['cnn'] = {'names': list(cnn.state_dict())}


    # two same-shaped layers, the second frozen: the shapes cannot tell which one trains
    class Twin(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 3)
            self.b = nn.Linear(3, 3)

        def forward(self, x):
            return self.b(self.a(x))


    twin = Twin()
    twin.b.requires_grad_(False)
    topt = torch.optim.Adam([p for p in twin.parameters() if p.requires_grad], lr=1e-3)
    train(twin, topt, lambda: torch.randn(2, 3))
    torch.save(topt.state_dict(), at('twin.opt.pt'))
    torch.save(twin.state_dict(), at('twin.model.bin'))


    # one group of every parameter: PyTorch's positional pairing is the model's order
    class MLP(nn.Module):
        def __init__(self, swapped=False):
            super().__init__()
            if swapped:
                self.l2 = nn.Linear(4, 5)
                self.l1 = nn.Linear(3, 4)
            else:
                self.l1 = nn.Linear(3, 4)
                self.l2 = nn.Linear(4, 5)

        def forward(self, x):
            return self.l2(torch.relu(self.l1(x)))


    mlp = MLP()
    mopt = torch.optim.Adam(mlp.parameters(), lr=1e-3)
    train(mlp, mopt, lambda: torch.randn(2, 3))
    torch.save(mopt.state_dict(), at('mlp.opt.pt'))
    torch.save(mlp.state_dict(), at('mlp.model.bin'))
    torch.save(MLP(swapped=True).state_dict(), at('mlp.swapped.bin'))

    # one AdamW group of every parameter of the tied model: the round trip through TorchLean
    rt = LM()
    ropt = torch.optim.AdamW(rt.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.01)
    train(rt, ropt, lambda: torch.randint(0, 11, (2, 5)))
    torch.save(ropt.state_dict(), at('rt.opt.pt'))
    torch.save(rt.state_dict(), at('rt.model.bin'))
    torch.save({'model': rt.state_dict(), 'optimizer': ropt.state_dict()}, at('rt.both.pt'))
    train(rt, ropt, lambda: torch.randint(0, 11, (2, 5)), steps=1)  # one step later
    torch.save(ropt.state_dict(), at('rt4.opt.pt'))
    torch.save(rt.state_dict(), at('rt4.model.bin'))

    # bfloat16 moments
    bf = MLP().to(torch.bfloat16)
    bopt = torch.optim.Adam(bf.parameters(), lr=1e-3)
    train(bf, bopt, lambda: torch.randn(2, 3, dtype=torch.bfloat16))
    torch.save(bopt.state_dict(), at('bf16.opt.pt'))
    torch.save(bf.state_dict(), at('bf16.model.bin'))

    # Parameters beside a plain tensor: keep_vars=True tells the buffer apart
    torch.save(lm.state_dict(keep_vars=True), at('lm.keepvars.bin'))

    # the round trip's model untied: lm_head a Parameter of its own (the same values)
    untied = LM()
    untied.load_state_dict(rt.state_dict())
    untied.lm_head.weight = nn.Parameter(rt.wte.weight.detach().clone())
    torch.save(untied.state_dict(), at('rt.untied.bin'))

    # Lightning's layout: the model under state_dict, the optimizers under optimizer_states
    torch.save({'epoch': 0, 'global_step': 7, 'pytorch-lightning_version': '2.0.0', 'state_dict': cnn.state_dict(),
                'optimizer_states': [copt.state_dict()], 'lr_schedulers': []}, at('cnn.ckpt'))

    # a Trainer folder of a tied GPT-like model, and the models a user may pair its optimizer with
    def hf_groups(model):
        decay = [n for n, p in model.named_parameters() if n.endswith('weight') and 'ln' not in n]
        return [{'params': [p for n, p in model.named_parameters() if n in decay], 'weight_decay': 0.1},
                {'params': [p for n, p in model.named_parameters() if n not in decay], 'weight_decay': 0.0}]

    def untie(model):
        model.lm_head.weight = nn.Parameter(model.wte.weight.detach().clone())
        return model

    gpt = LM(vocab=50, d=16)
    gopt = torch.optim.AdamW(hf_groups(gpt), lr=1e-3, betas=(0.9, 0.95))
    train(gpt, gopt, lambda: torch.randint(0, 50, (2, 5)))
    for folder in ('gpt/checkpoint-20', 'gpt/st/checkpoint-20'):
        os.makedirs(at(folder), exist_ok=True)
        torch.save(gopt.state_dict(), at(folder + '/optimizer.pt'))
    torch.save(gpt.state_dict(), at('gpt/checkpoint-20/pytorch_model.bin'))
    write_safetensors(at('gpt/st/checkpoint-20/model.safetensors'), gpt.state_dict(), drop=['lm_head.weight'])
    user = untie(LM(vocab=50, d=16))
    user.load_state_dict(gpt.state_dict())
    torch.save(user.state_dict(), at('gpt/untied.bin'))
    torch.save(LM(vocab=58, d=16).state_dict(), at('gpt/resized.bin'))

    # what torch says: the untied model's optimizer (the same groups) refuses the saved state;
    # with lm_head frozen (not given to the optimizer) it loads
    def load_into(model, frozen=()):
        for n, p in model.named_parameters():
            p.requires_grad_(n not in frozen)
        groups = [{**g, 'params': [p for p in g['params'] if p.requires_grad]} for g in hf_groups(model)]
        try:
            torch.optim.AdamW(groups, lr=1e-3, betas=(0.9, 0.95)).load_state_dict(torch.load(at('gpt/checkpoint-20/optimizer.pt')))
            return None
        except ValueError as e:
            return str(e)
    facts['gpt'] = {'untied': load_into(untie(LM(vocab=50, d=16))),
                    'untiedFrozen': load_into(untie(LM(vocab=50, d=16)), frozen=('lm_head.weight',)),
                    'tied': load_into(LM(vocab=50, d=16))}

    with open(at('facts.json'), 'w') as f:
        json.dump(facts, f)
