"""Modules for the nest-extract tests: a small language model given as --module FILE:CLASS, and one
that torch.fx cannot trace (control flow on a tensor's value)."""
import torch.nn as nn
import torch.nn.functional as F


class MlpBlock(nn.Module):
    def __init__(self, hidden, inner):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.up = nn.Linear(hidden, inner)
        self.down = nn.Linear(inner, hidden)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


class TinyMlpLM(nn.Module):
    """Token embedding, `layers` residual MLP blocks, a final norm and an untied output layer."""

    def __init__(self, layers, hidden, vocab, inner=None):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList([MlpBlock(hidden, inner or 4 * hidden) for _ in range(layers)])
        self.norm = nn.LayerNorm(hidden)
        self.out = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids):
        x = self.embed(input_ids)
        for block in self.blocks:
            x = block(x)
        return self.out(self.norm(x))


class Untraceable(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(16, 8)

    def forward(self, input_ids):
        x = self.embed(input_ids)
        if x.sum() > 0:  # data-dependent control flow: torch.fx cannot trace it
            return x * 2
        return x
