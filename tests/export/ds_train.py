"""Trains a stagecraft DeepSpeed export of the 4-layer GPT of test
export_deepspeed_runs (stagecraft model gen gpt --layers 4 --hidden 64
--heads 4 --seq 32 --vocab 128 --tied) for two steps on random tokens, as the
export's header says to: the layers LAYERS names, TiedLayerSpec for TIED,
planned_pipeline_module (pp > 1) or planned_module and train_batch (pp = 1),
deepspeed.initialize with DS_CONFIG alone. Prints each rank's stage bounds
(pp > 1) and loss. Run beside deepspeed_pipeline.py
with torchrun (gloo, so it runs on CPU as well)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

import deepspeed
from deepspeed.pipe import LayerSpec, TiedLayerSpec
import deepspeed_pipeline as plan
from deepspeed_pipeline import DS_CONFIG, LAYERS, NUM_STAGES, TIED

VOCAB, HIDDEN, SEQ, HEADS = 128, 64, 32, 4


class Embedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(VOCAB, HIDDEN) * 0.02)
        self.pos = nn.Parameter(torch.randn(SEQ, HIDDEN) * 0.02)

    def forward(self, tokens):
        return F.embedding(tokens, self.weight) + self.pos


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(HIDDEN), nn.LayerNorm(HIDDEN)
        self.qkv, self.proj = nn.Linear(HIDDEN, 3 * HIDDEN), nn.Linear(HIDDEN, HIDDEN)
        self.fc1, self.fc2 = nn.Linear(HIDDEN, 4 * HIDDEN), nn.Linear(4 * HIDDEN, HIDDEN)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, HEADS, -1).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, HIDDEN))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def head(embedding, x):
    return F.linear(x, embedding.weight)


def spec(name):
    key = next((k for k, names in TIED.items() if name in names), None)
    if name == "embed":
        return TiedLayerSpec(key, Embedding) if key else LayerSpec(Embedding)
    if name == "head":
        return TiedLayerSpec(key, Embedding, forward_fn=head)
    if name.startswith("blocks."):
        return LayerSpec(Block)
    return LayerSpec(nn.LayerNorm, HIDDEN)


def batches():
    g = torch.Generator().manual_seed(1)
    while True:
        t = torch.randint(VOCAB, (DS_CONFIG["train_micro_batch_size_per_gpu"], SEQ + 1), generator=g)
        yield t[:, :-1].contiguous(), t[:, 1:].contiguous()


def main():
    deepspeed.init_distributed(dist_backend="gloo")
    def loss_fn(out, y):
        return F.cross_entropy(out.float().flatten(0, 1), y.flatten())

    specs = [spec(n) for n in LAYERS]
    if NUM_STAGES > 1:
        net = plan.planned_pipeline_module(specs, loss_fn=loss_fn)
    else:
        net = plan.planned_module(specs, loss_fn=loss_fn)
    engine, _, _, _ = deepspeed.initialize(
        model=net, config=DS_CONFIG,
        model_parameters=[p for p in net.parameters() if p.requires_grad])
    if NUM_STAGES > 1:
        print(f"rank {engine.global_rank}: parts {engine.module.parts}", flush=True)
    data = batches()
    for step in range(2):
        loss = engine.train_batch(data) if NUM_STAGES > 1 else plan.train_batch(engine, data)
        print(f"rank {engine.global_rank} step {step}: loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
