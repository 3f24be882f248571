"""A nanoGPT-like model and its AdamW state, made by torch for the viewer's counts.

python3 gpt_seeds.py DIR writes into DIR:
  gpt.opt.pt, gpt.model.bin   GPT(vocab 50, block 8, 2 layers, 16 wide): lm_head tied to wte, a
                              causal-mask buffer per layer (attn.bias, float); AdamW in nanoGPT's
                              decay / no-decay groups, two steps
  facts.json                  what torch counts: the parameters (sum(p.numel() for p in
                              model.parameters())), the state dict's values, the buffers'
"""
import json
import os
import sys

import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, d, block):
        super().__init__()
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.register_buffer('bias', torch.tril(torch.ones(block, block)).view(1, 1, block, block))

    def forward(self, x):
        q, k, v = self.c_attn(x).split(x.shape[-1], dim=2)
        t = x.shape[1]
        att = (q @ k.transpose(-2, -1)).masked_fill(self.bias[0, 0, :t, :t] == 0, float('-inf')).softmax(-1)
        return self.c_proj(att @ v)


class Block(nn.Module):
    def __init__(self, d, block):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = Attention(d, block)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.c_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(torch.relu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, vocab=50, block=8, layers=2, d=16):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(block, d)
        self.h = nn.ModuleList([Block(d, block) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied

    def forward(self, i):
        x = self.wte(i) + self.wpe(torch.arange(i.shape[1]))
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))


if __name__ == '__main__':
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = GPT()
    params = [p for p in model.parameters()]
    groups = [{'params': [p for p in params if p.dim() >= 2], 'weight_decay': 0.1},
              {'params': [p for p in params if p.dim() < 2], 'weight_decay': 0.0}]
    opt = torch.optim.AdamW(groups, lr=6e-4, betas=(0.9, 0.95))
    for _ in range(2):
        opt.zero_grad()
        model(torch.randint(0, 50, (2, 8))).sum().backward()
        opt.step()
    torch.save(opt.state_dict(), os.path.join(out, 'gpt.opt.pt'))
    torch.save(model.state_dict(), os.path.join(out, 'gpt.model.bin'))
    with open(os.path.join(out, 'facts.json'), 'w') as f:
        json.dump({
            'parameters': sum(p.numel() for p in model.parameters()),
            'stateDictValues': sum(t.numel() for t in model.state_dict().values()),
            'buffers': sum(b.numel() for b in model.buffers()),
        }, f)
