"""fixtures.py - small factories for the tracer tests (FILE.py:FACTORY specs)."""
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


def guessed():
    """No example inputs: the tracer guesses (B, seq, 8) from the first Linear."""
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
