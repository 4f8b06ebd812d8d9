"""tiny_gpt.py - a GPT-style decoder built from torch.nn parts, for the tracer tests.

Token and position embeddings, `layers` pre-norm blocks (LayerNorm,
nn.MultiheadAttention with a causal mask, LayerNorm, Linear-GELU-Linear MLP),
a final LayerNorm and an LM head whose weight IS the token embedding's
(tied), so torch counts it once.

    torch_trace.py tests/tracer/tiny_gpt.py:make --seq 32 -o gpt.json
    torch_trace.py tests/tracer/tiny_gpt.py:make:layers=4,hidden=128 -o gpt.json
    torch_trace.py tests/tracer/tiny_gpt.py:make:loss=1 -o gpt.json   # forward returns the loss
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, hidden, heads, seq):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(),
                                 nn.Linear(4 * hidden, hidden))
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, x):
        s = x.shape[1]
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, attn_mask=self.mask[:s, :s], need_weights=False)
        x = x + a
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab=1000, hidden=64, heads=4, layers=2, seq=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(seq, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads, seq) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)
        self.head.weight = self.embed.weight  # tied

    def forward(self, idx, targets=None):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.embed(idx) + self.pos(pos)
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.ln_f(x))
        if targets is None:
            return logits
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def make(batch=1, seq=32, vocab=1000, hidden=64, heads=4, layers=2, loss=0, **_):
    m = TinyGPT(vocab, hidden, heads, layers, seq)
    idx = torch.randint(0, vocab, (batch, seq))
    if loss:
        return m, (idx, torch.randint(0, vocab, (batch, seq)))
    return m, idx
