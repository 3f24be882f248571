"""The PyTorch side of bench/pytorch.mjs (/usr/bin/python3, torch 1.13).

  torch_baseline.py make DIR          a GPT-2-small-sized model (124M parameters, random weights,
                                      lm_head tied to the token embedding), one AdamW step on
                                      random gradients: DIR/optimizer.pt, DIR/pytorch_model.bin
  torch_baseline.py load OPT          torch.load of the optimizer file
  torch_baseline.py stats OPT         torch.load, then min, max, rms, NaNs and infinities of
                                      exp_avg and exp_avg_sq of every parameter
  torch_baseline.py health OPT MODEL  torch.load of both, then Adam's update lr * m_hat /
                                      (sqrt(v_hat) + eps) of every parameter with its max |u|,
                                      rms and rms(u) / rms(parameter)

Prints one JSON line: {"load": s, "pass": s, "total": s} (seconds in this process, after the
imports; "pass" 0 for load)."""
import json
import sys
import time

import torch

VOCAB, CONTEXT, WIDTH, LAYERS = 50257, 1024, 768, 12


def conv1d(nin, nout):
    """GPT-2's Conv1D: a [in, out] weight and a bias."""
    m = torch.nn.Module()
    m.weight = torch.nn.Parameter(torch.randn(nin, nout) * 0.02)
    m.bias = torch.nn.Parameter(torch.zeros(nout))
    return m


def gpt2():
    model = torch.nn.Module()
    t = torch.nn.Module()
    t.wte = torch.nn.Embedding(VOCAB, WIDTH)
    t.wpe = torch.nn.Embedding(CONTEXT, WIDTH)
    blocks = []
    for _ in range(LAYERS):
        b = torch.nn.Module()
        b.ln_1 = torch.nn.LayerNorm(WIDTH)
        b.attn = torch.nn.Module()
        b.attn.c_attn = conv1d(WIDTH, 3 * WIDTH)
        b.attn.c_proj = conv1d(WIDTH, WIDTH)
        b.ln_2 = torch.nn.LayerNorm(WIDTH)
        b.mlp = torch.nn.Module()
        b.mlp.c_fc = conv1d(WIDTH, 4 * WIDTH)
        b.mlp.c_proj = conv1d(4 * WIDTH, WIDTH)
        blocks.append(b)
    t.h = torch.nn.ModuleList(blocks)
    t.ln_f = torch.nn.LayerNorm(WIDTH)
    model.transformer = t
    model.lm_head = torch.nn.Linear(WIDTH, VOCAB, bias=False)
    model.lm_head.weight = t.wte.weight
    return model


def make(folder):
    torch.manual_seed(0)
    model = gpt2()
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
    for p in model.parameters():
        p.grad = torch.randn_like(p) * 1e-3
    opt.step()
    torch.save(opt.state_dict(), f'{folder}/optimizer.pt')
    torch.save(model.state_dict(), f'{folder}/pytorch_model.bin')
    print(json.dumps({'parameters': sum(p.numel() for p in model.parameters())}))


def moments_stats(state):
    out = []
    for s in state['state'].values():
        for key in ('exp_avg', 'exp_avg_sq'):
            x = s[key]
            out.append((x.min().item(), x.max().item(), x.square().mean().sqrt().item(),
                        int(x.isnan().sum()), int(x.isinf().sum())))
    return out


def health(state, model):
    group = state['param_groups'][0]
    lr, (beta1, beta2), eps = group['lr'], group['betas'], group['eps']
    seen, unique = set(), []   # a tied tensor once, as the optimizer numbers it
    for p in model.values():
        if p.data_ptr() not in seen:
            seen.add(p.data_ptr())
            unique.append(p)
    out = []
    for i, s in state['state'].items():
        t = float(s['step'])
        m_hat = s['exp_avg'] / (1 - beta1 ** t)
        v_hat = s['exp_avg_sq'] / (1 - beta2 ** t)
        u = lr * m_hat / (v_hat.sqrt() + eps)
        rms = u.square().mean().sqrt().item()
        out.append((u.abs().max().item(), rms, rms / max(unique[i].square().mean().sqrt().item(), 1e-30)))
    return out


def main():
    mode = sys.argv[1]
    if mode == 'make':
        return make(sys.argv[2])
    torch.set_grad_enabled(False)
    t0 = time.perf_counter()
    state = torch.load(sys.argv[2])
    model = torch.load(sys.argv[3]) if mode == 'health' else None
    t1 = time.perf_counter()
    if mode == 'stats':
        moments_stats(state)
    elif mode == 'health':
        health(state, model)
    t2 = time.perf_counter()
    print(json.dumps({'load': t1 - t0, 'pass': t2 - t1, 'total': t2 - t0}))


main()
