"""The decoder's layers, each one planner layer, with Megatron-style tensor parallelism.

A block's attention heads and MLP columns are split across the TP group: the input is
copied to every TP rank (its gradient all-reduced on the way back) and the partial outputs
of the second projections are all-reduced. The embedding and the head are replicated on
every TP rank; their gradients agree because every TP rank sees the same full input and
output gradient. Every weight is drawn from a generator seeded by (seed, layer) at full size
and then sliced, so the same model comes out of any layout.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from .arch import Arch


class _CopyToTP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, g):
        g = g.contiguous()
        dist.all_reduce(g, group=ctx.group)
        return g, None


class _ReduceFromTP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        x = x.contiguous().clone()
        dist.all_reduce(x, group=group)
        return x

    @staticmethod
    def backward(ctx, g):
        return g, None


class TP:
    """A tensor-parallel group: size 1 means no communication at all."""

    def __init__(self, size: int = 1, rank: int = 0, group=None):
        self.size, self.rank, self.group = size, rank, group

    def copy(self, x):
        return x if self.size == 1 else _CopyToTP.apply(x, self.group)

    def reduce(self, x):
        return x if self.size == 1 else _ReduceFromTP.apply(x, self.group)


def _gen(seed: int, layer: int, device) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(seed * 1_000_003 + layer)
    return g


def _normal(shape, g, std=0.02):
    return torch.randn(*shape, generator=g, device=g.device) * std


class Embedding(nn.Module):
    """Planner layer 0: token and learned position embeddings."""

    def __init__(self, a: Arch, seed: int, device="cpu"):
        super().__init__()
        g = _gen(seed, 0, device)
        self.tok = nn.Parameter(_normal((a.vocab, a.hidden), g))
        self.pos = nn.Parameter(_normal((a.seq_len, a.hidden), g))

    def forward(self, ids):
        return F.embedding(ids, self.tok) + self.pos[: ids.shape[1]]


class Block(nn.Module):
    """Planner layers 1..L: pre-norm causal self-attention and a GELU MLP, split over TP."""

    def __init__(self, a: Arch, layer: int, seed: int, tp: TP, device="cpu"):
        super().__init__()
        a.check(tp.size)
        self.tp, self.heads = tp, a.heads // tp.size
        self.head_dim = a.hidden // a.heads
        g = _gen(seed, layer, device)
        h, f, n, r = a.hidden, a.ffn, tp.size, tp.rank
        qkv = _normal((3, a.heads, self.head_dim, h), g)  # [q|k|v] × heads, sliced by head
        proj = _normal((h, a.heads, self.head_dim), g)
        fc1 = _normal((f, h), g)
        fc2 = _normal((h, f), g)
        hs = slice(r * self.heads, (r + 1) * self.heads)
        fs = slice(r * (f // n), (r + 1) * (f // n))
        self.ln1 = nn.LayerNorm(h, device=device)
        self.qkv_w = nn.Parameter(qkv[:, hs].reshape(3 * self.heads * self.head_dim, h).contiguous())
        self.qkv_b = nn.Parameter(torch.zeros(3 * self.heads * self.head_dim, device=device))
        self.proj_w = nn.Parameter(proj[:, hs].reshape(h, self.heads * self.head_dim).contiguous())
        self.proj_b = nn.Parameter(torch.zeros(h, device=device))
        self.ln2 = nn.LayerNorm(h, device=device)
        self.fc1_w = nn.Parameter(fc1[fs].contiguous())
        self.fc1_b = nn.Parameter(torch.zeros(f // n, device=device))
        self.fc2_w = nn.Parameter(fc2[:, fs].contiguous())
        self.fc2_b = nn.Parameter(torch.zeros(h, device=device))

    def forward(self, x):
        b, s, _ = x.shape
        y = self.tp.copy(self.ln1(x))
        qkv = F.linear(y, self.qkv_w, self.qkv_b).view(b, s, 3, self.heads, self.head_dim)
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
        att = causal_attention(q, k, v)
        att = att.transpose(1, 2).reshape(b, s, self.heads * self.head_dim)
        x = x + self.tp.reduce(F.linear(att, self.proj_w)) + self.proj_b
        y = self.tp.copy(self.ln2(x))
        y = F.gelu(F.linear(y, self.fc1_w, self.fc1_b))
        return x + self.tp.reduce(F.linear(y, self.fc2_w)) + self.fc2_b


def causal_attention(q, k, v):
    """Causal softmax attention: torch's fused kernel where it has one (2.0 on), the same
    arithmetic written out where it has not (Debian's 1.13, on which CI runs the trainer)."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    s = q.shape[-2]
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    mask = torch.ones(s, s, dtype=torch.bool, device=q.device).tril()
    return scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v


class Head(nn.Module):
    """Planner layer L+1: final norm, projection to the vocabulary (own weights) and the
    mean cross-entropy loss against the targets."""

    def __init__(self, a: Arch, seed: int, device="cpu"):
        super().__init__()
        g = _gen(seed, a.layers + 1, device)
        self.ln = nn.LayerNorm(a.hidden, device=device)
        self.w = nn.Parameter(_normal((a.vocab, a.hidden), g))

    def forward(self, x, targets):
        logits = F.linear(self.ln(x), self.w)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))


def build_layer(a: Arch, index: int, seed: int, tp: TP, device="cpu") -> nn.Module:
    """The module of planner layer index, built on device (its weights drawn there: the same
    weights for every layout on one kind of device)."""
    if index == 0:
        return Embedding(a, seed, device)
    if index == a.layers + 1:
        return Head(a, seed, device)
    if 1 <= index <= a.layers:
        return Block(a, index, seed, tp, device)
    raise ValueError(f"layer {index} is outside the model's 0..{a.layers + 1}")


class Stage(nn.Module):
    """The planner layers [first, end) of one pipeline stage, named layers.<index> so
    checkpoints carry global layer numbers (schooner_ckpt reads them back by stage)."""

    def __init__(self, a: Arch, first: int, end: int, seed: int, tp: TP, device="cpu"):
        super().__init__()
        if not 0 <= first < end <= a.planner_layers:
            raise ValueError(f"stage layers [{first}, {end}) are not inside 0..{a.planner_layers}")
        self.a, self.first, self.end = a, first, end
        self.layers = nn.ModuleDict({str(i): build_layer(a, i, seed, tp, device) for i in range(first, end)})

    @property
    def has_head(self) -> bool:
        return self.end == self.a.planner_layers

    def forward(self, x, targets=None):
        for i in range(self.first, self.end):
            layer = self.layers[str(i)]
            x = layer(x, targets) if isinstance(layer, Head) else layer(x)
        return x
