"""fixtures.py - small factories for the tracer tests (FILE.py:FACTORY specs)."""
import types

import torch
import torch.nn as nn


class TwoTower(nn.Module):
    """fuse consumes the outputs of two earlier siblings: an `inputs` edge."""

    def __init__(self):
        super().__init__()
        self.enc_a = nn.Linear(16, 16)
        self.enc_b = nn.Linear(16, 16)
        self.fuse = nn.Bilinear(16, 16, 8)

    def forward(self, x):
        a = self.enc_a(x)
        b = self.enc_b(x)
        return self.fuse(a, b)


def two_tower(batch=2, **_):
    return TwoTower(), torch.randn(batch, 16)


class ConcatTowers(nn.Module):
    """LLaVA's pattern: an image tower's tokens and a text embedding's are
    concatenated in the model's own code, then run through a layer."""

    def __init__(self):
        super().__init__()
        self.vision = nn.Linear(24, 32)
        self.embed = nn.Embedding(100, 32)
        self.layer = nn.Linear(32, 32)

    def forward(self, patches, ids):
        v = self.vision(patches)
        t = self.embed(ids)
        return self.layer(torch.cat([v, t], 1))


def concat_towers(batch=2, **_):
    return ConcatTowers(), (torch.randn(batch, 6, 24), torch.randint(0, 100, (batch, 10)))


class Raises(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        raise ValueError("this forward always fails")


def raises(**_):
    return Raises(), torch.randn(2, 4)


def not_a_module(**_):
    return 42


def one_linear(**_):
    """A model that is one leaf."""
    return nn.Linear(8, 8)


def guessed():
    """No example inputs: the tracer guesses (B, seq, 8) from the first Linear."""
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))


class DataDependent(nn.Module):
    """forward branches on a value: meta tensors have none, so shape-only
    tracing falls back to one real forward pass on the CPU."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x)
        if y.abs().sum().item() > 1e30:
            y = y * 2
        return y


def data_dependent(batch=2, **_):
    return DataDependent(), torch.randn(batch, 8)


class ValueInInit(nn.Module):
    """__init__ reads tensor values (timm-style stochastic depth rates), which
    fails on the meta device: built on the CPU, then moved to meta. The head is
    tied to the embedding and must stay tied."""

    def __init__(self):
        super().__init__()
        rates = [r.item() for r in torch.linspace(0, 0.1, 2)]
        self.emb = nn.Embedding(100, 16)
        self.drops = nn.ModuleList(nn.Dropout(r) for r in rates)
        self.head = nn.Linear(16, 100, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, idx):
        x = self.emb(idx)
        for d in self.drops:
            x = d(x)
        return self.head(x)


def value_in_init(batch=2, **_):
    return ValueInInit(), torch.randint(0, 100, (batch, 8))


class RMSNorm(nn.Module):
    def __init__(self, h, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _rotate_half(t):
    t1, t2 = t.chunk(2, dim=-1)
    return torch.cat((-t2, t1), dim=-1)


class RotaryEmbedding(nn.Module):
    """cos and sin tables for every position, computed once a forward by the
    model and read by every layer's attention (Hugging Face's Llama)."""

    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / base ** (torch.arange(0, head_dim, 2).float()
                                                        / head_dim))

    def forward(self, x):
        t = torch.arange(x.shape[1], device=x.device).float()
        emb = torch.cat([torch.outer(t, self.inv_freq)] * 2, dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


class GQAttention(nn.Module):
    """Llama-style attention: separate q, k, v, o projections, grouped K/V
    heads (num_key_value_heads), scores and values inline."""

    def __init__(self, h, heads, kv_heads, hf_config=False, rel_bias=False):
        super().__init__()
        # T5's relative position biases: a table of 32 buckets x heads
        self.relative_attention_bias = nn.Embedding(32, heads) if rel_bias else None
        if hf_config:
            # as Hugging Face's attention in recent transformers (5.25): the
            # head counts only in its config, head_dim and the groups on it
            self.config = types.SimpleNamespace(num_attention_heads=heads,
                                                num_key_value_heads=kv_heads)
            self.num_key_value_groups = heads // kv_heads
        else:
            self.num_heads, self.num_key_value_heads = heads, kv_heads
        self.head_dim = h // heads
        self.q_proj = nn.Linear(h, h, bias=False)
        self.k_proj = nn.Linear(h, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(h, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(h, h, bias=False)

    def forward(self, x, cos=None, sin=None, mask=None):
        B, T, C = x.shape
        a = C // self.head_dim
        kvh = self.k_proj.out_features // self.head_dim
        q = self.q_proj(x).view(B, T, a, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, kvh, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, kvh, self.head_dim).transpose(1, 2)
        rep = a // kvh  # HF's repeat_kv
        k = k[:, :, None].expand(B, kvh, rep, T, self.head_dim).reshape(B, a, T, self.head_dim)
        v = v[:, :, None].expand(B, kvh, rep, T, self.head_dim).reshape(B, a, T, self.head_dim)
        if cos is not None:  # rotary positions, the tables computed once by the model
            q, k = q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
        att = q @ k.transpose(-2, -1) / self.head_dim ** 0.5
        if self.relative_attention_bias is not None:
            pos = torch.arange(T, device=x.device)
            rel = (pos[None, :] - pos[:, None]).clamp(-16, 15) + 16
            att = att + self.relative_attention_bias(rel).permute(2, 0, 1)[None]
        if mask is not None:
            att = att + mask
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(y)


class SwiGLU(nn.Module):
    def __init__(self, h, f):
        super().__init__()
        self.gate_proj = nn.Linear(h, f, bias=False)
        self.up_proj = nn.Linear(h, f, bias=False)
        self.down_proj = nn.Linear(f, h, bias=False)

    def forward(self, x):
        return self.down_proj(torch.nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaBlock(nn.Module):
    def __init__(self, h, heads, kv_heads, f, hf_config=False, rel_bias=False):
        super().__init__()
        self.input_layernorm = RMSNorm(h)
        self.self_attn = GQAttention(h, heads, kv_heads, hf_config, rel_bias)
        self.post_attention_layernorm = RMSNorm(h)
        self.mlp = SwiGLU(h, f)

    def forward(self, x, cos=None, sin=None, mask=None):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaLike(nn.Module):
    """Untied embedding and head; a patch-free stem: every module has tp data."""

    def __init__(self, vocab, h, heads, kv_heads, f, layers, hf_config=False, rotary=False,
                 causal=False, rel_bias=False):
        super().__init__()
        self.causal = causal
        self.embed_tokens = nn.Embedding(vocab, h)
        self.rotary_emb = RotaryEmbedding(h // heads) if rotary else None
        # rel_bias: the first layer's attention holds T5's relative bias table
        self.layers = nn.ModuleList(LlamaBlock(h, heads, kv_heads, f, hf_config,
                                               rel_bias and i == 0) for i in range(layers))
        self.norm = RMSNorm(h)
        self.lm_head = nn.Linear(h, vocab, bias=False)

    def forward(self, idx):
        x = self.embed_tokens(idx)
        cos, sin = self.rotary_emb(x) if self.rotary_emb is not None else (None, None)
        mask = None
        if self.causal:  # as Hugging Face's eager mask: kv_idx <= q_idx, then 0 or -inf
            T = idx.shape[1]
            pos = torch.arange(T, device=idx.device)
            allowed = pos.view(1, 1, 1, T) <= pos.view(1, 1, T, 1)
            mask = torch.where(allowed, 0.0, float("-inf")).to(x.dtype)
        for b in self.layers:
            x = b(x, cos, sin, mask)
        return self.lm_head(self.norm(x))


def llama_like(batch=2, seq=16, vocab=500, hidden=64, heads=4, kv_heads=2, ffn=176, layers=2,
               hf_config=False, rotary=False, causal=False, rel_bias=False, **_):
    return (LlamaLike(vocab, hidden, heads, kv_heads, ffn, layers, hf_config, rotary, causal,
                      rel_bias),
            torch.randint(0, vocab, (batch, seq)))


class EinsumProj(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.w = nn.Parameter(torch.randn(h, 2 * h) * 0.02)

    def forward(self, x):
        return torch.einsum("bsh,hk->bsk", x, self.w)


class EinsumScores(nn.Module):
    def forward(self, q, k):
        return torch.einsum("bqd,bkd->bqk", q, k)


class EinsumNet(nn.Module):
    """A projection by a parameter and attention-like scores, both einsums."""

    def __init__(self, h):
        super().__init__()
        self.proj = EinsumProj(h)
        self.scores = EinsumScores()

    def forward(self, x):
        q, k = self.proj(x).chunk(2, dim=-1)
        return self.scores(q, k)


def einsum_net(batch=2, seq=16, hidden=32, **_):
    return EinsumNet(hidden), torch.randn(batch, seq, hidden)


class ConvZoo(nn.Module):
    """Convolutions of every GEMM form the tracer knows, one leaf each: a
    grouped one (4 groups), a transposed one (stride 2), a grouped
    transposed one (2 groups) and a depthwise one (a stencil: a memory-bound
    kernel that counts its FLOPs)."""

    def __init__(self, ch=8):
        super().__init__()
        self.grouped = nn.Conv2d(ch, 16, 3, padding=1, groups=4)
        self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.up_grouped = nn.ConvTranspose2d(8, 8, 3, padding=1, groups=2)
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8)

    def forward(self, x):
        return self.depthwise(self.up_grouped(self.up(self.grouped(x))))


def conv_zoo(batch=2, image=8, **_):
    return ConvZoo(), torch.randn(batch, 8, image, image)


class BertSelfAttention(nn.Module):
    """Hugging Face's BERT splits its layer across modules: q, k, v and the
    core here (with the head count), the out projection in the next one."""

    def __init__(self, h, heads):
        super().__init__()
        self.num_attention_heads, self.attention_head_size = heads, h // heads
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)

    def forward(self, x):
        B, T, C = x.shape
        a, d = self.num_attention_heads, self.attention_head_size
        q, k, v = (p(x).view(B, T, a, d).transpose(1, 2) for p in (self.query, self.key,
                                                                   self.value))
        att = torch.softmax(q @ k.transpose(-2, -1) / d ** 0.5, dim=-1)
        return (att @ v).transpose(1, 2).reshape(B, T, C)


class BertResidualOut(nn.Module):
    """BertSelfOutput and BertOutput: a projection back to h, the residual, a norm."""

    def __init__(self, i, h):
        super().__init__()
        self.dense, self.dropout, self.LayerNorm = nn.Linear(i, h), nn.Dropout(0.1), nn.LayerNorm(h)

    def forward(self, x, inp):
        return self.LayerNorm(self.dropout(self.dense(x)) + inp)


class BertAttention(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.self = BertSelfAttention(h, heads)
        self.output = BertResidualOut(h, h)

    def forward(self, x):
        return self.output(self.self(x), x)


class BertIntermediate(nn.Module):
    def __init__(self, h, f):
        super().__init__()
        self.dense, self.intermediate_act_fn = nn.Linear(h, f), nn.GELU()

    def forward(self, x):
        return self.intermediate_act_fn(self.dense(x))


class BertLayer(nn.Module):
    def __init__(self, h, heads, f):
        super().__init__()
        self.attention = BertAttention(h, heads)
        self.intermediate = BertIntermediate(h, f)
        self.output = BertResidualOut(f, h)

    def forward(self, x):
        a = self.attention(x)
        return self.output(self.intermediate(a), a)


class BertLike(nn.Module):
    def __init__(self, vocab, h, heads, f, layers):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, h)
        self.layer = nn.ModuleList(BertLayer(h, heads, f) for _ in range(layers))
        self.decoder = nn.Linear(h, vocab)

    def forward(self, idx):
        x = self.word_embeddings(idx)
        for layer in self.layer:
            x = layer(x)
        return self.decoder(x)


def bert_like(batch=2, seq=16, vocab=500, hidden=64, heads=4, ffn=256, layers=2, **_):
    return BertLike(vocab, hidden, heads, ffn, layers), torch.randint(0, vocab, (batch, seq))
