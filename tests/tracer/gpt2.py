"""gpt2.py - GPT-2-like decoders for the tracer tests, attention written three ways.

The shape of nanoGPT's GPT (Karpathy, github.com/karpathy/nanoGPT, model.py):
token and position embeddings, `layers` pre-norm blocks (ln_1, attn, ln_2,
mlp = c_fc, GELU, c_proj, dropout), ln_f and an LM head tied to the token
embedding, logits for every position. `attn` selects the attention:

  inline  nanoGPT's CausalSelfAttention without flash: c_attn (h -> 3h), the
          scores and values as inline matmuls in forward (q @ k.transpose(-2,
          -1), softmax, att @ v), c_proj; n_head as an attribute
  mha     nn.MultiheadAttention with a causal mask, then a residual dropout
  sdpa    as inline, with F.scaled_dot_product_attention(is_causal=True)
          (torch >= 2.0 only)

GPT-2 small is the default: 12 layers, hidden 768, 12 heads, vocabulary 50257
(Radford et al. 2019), sequence 1024.

    torch_trace.py tests/tracer/gpt2.py:make --batch 2 --seq 1024 -o gpt2.json
    torch_trace.py tests/tracer/gpt2.py:make:attn=mha --batch 2 --seq 1024 -o gpt2_mha.json
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, hidden, heads, seq, dropout, sdpa):
        super().__init__()
        self.c_attn = nn.Linear(hidden, 3 * hidden)
        self.c_proj = nn.Linear(hidden, hidden)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        self.n_head = heads
        self.n_embd = hidden
        self.dropout = dropout
        self.sdpa = sdpa
        if not sdpa:
            self.register_buffer("bias", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                               dropout_p=self.dropout if self.training else 0,
                                               is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MHAAttention(nn.Module):
    def __init__(self, hidden, heads, seq, dropout):
        super().__init__()
        self.mha = nn.MultiheadAttention(hidden, heads, dropout=dropout, batch_first=True)
        self.resid_dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, x):
        T = x.shape[1]
        a, _ = self.mha(x, x, x, attn_mask=self.mask[:T, :T], need_weights=False)
        return self.resid_dropout(a)


class MLP(nn.Module):
    def __init__(self, hidden, dropout):
        super().__init__()
        self.c_fc = nn.Linear(hidden, 4 * hidden)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * hidden, hidden)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, hidden, heads, seq, dropout, attn):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden)
        if attn == "mha":
            self.attn = MHAAttention(hidden, heads, seq, dropout)
        else:
            self.attn = CausalSelfAttention(hidden, heads, seq, dropout, attn == "sdpa")
        self.ln_2 = nn.LayerNorm(hidden)
        self.mlp = MLP(hidden, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab, seq, layers, hidden, heads, dropout, attn):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, hidden),
            wpe=nn.Embedding(seq, hidden),
            drop=nn.Dropout(dropout),
            h=nn.ModuleList([Block(hidden, heads, seq, dropout, attn) for _ in range(layers)]),
            ln_f=nn.LayerNorm(hidden),
        ))
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # tied, as nanoGPT

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


def make(batch=2, seq=1024, vocab=50257, layers=12, hidden=768, heads=12, dropout=0.1,
         attn="inline", **_):
    if attn not in ("inline", "mha", "sdpa"):
        raise ValueError("attn=%s: inline, mha or sdpa" % attn)
    if attn == "sdpa" and not hasattr(F, "scaled_dot_product_attention"):
        raise ValueError("attn=sdpa needs torch >= 2.0 (F.scaled_dot_product_attention)")
    m = GPT(vocab, seq, layers, hidden, heads, dropout, attn)
    return m, torch.randint(0, vocab, (batch, seq))
