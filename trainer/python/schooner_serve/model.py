"""A Llama-style decoder (RMSNorm, RoPE, grouped-query attention, SwiGLU MLP) with weights drawn
from (seed, layer), so every process — every pipeline stage, every replacement — builds the same
model without downloading anything.

Layers are numbered as in schooner_train: 0 the embedding, 1..L the blocks, L+1 the head (final
norm and, when untied, the lm head). Block b (0-based, what `--layers a:b` and the KV protocol's
`layer` count) draws from layer b+1. Weights are drawn in f32 on the device they live on and cast
to the serving dtype: the same model on every process of one device kind.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .config import ModelConfig


def _gen(seed: int, layer: int, device) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(seed * 1_000_003 + layer)
    return g


def _normal(shape, g, std, dtype):
    return (torch.randn(*shape, generator=g, device=g.device, dtype=torch.float32) * std).to(dtype)


class Block:
    def __init__(self, c: ModelConfig, index: int, seed: int, device, dtype):
        g = _gen(seed, index + 1, device)
        h, hd = c.hidden, c.head_dim
        s_in, s_ffn = h ** -0.5, c.ffn ** -0.5
        self.wq = _normal((c.heads * hd, h), g, s_in, dtype)
        self.wk = _normal((c.kv_heads * hd, h), g, s_in, dtype)
        self.wv = _normal((c.kv_heads * hd, h), g, s_in, dtype)
        self.wo = _normal((h, c.heads * hd), g, (c.heads * hd) ** -0.5, dtype)
        self.w_gate = _normal((c.ffn, h), g, s_in, dtype)
        self.w_up = _normal((c.ffn, h), g, s_in, dtype)
        self.w_down = _normal((h, c.ffn), g, s_ffn, dtype)
        self.ln1 = torch.ones(h, device=device, dtype=dtype)
        self.ln2 = torch.ones(h, device=device, dtype=dtype)


def embedding(c: ModelConfig, seed: int, device, dtype):
    return _normal((c.vocab, c.hidden), _gen(seed, 0, device), 1.0, dtype)


def lm_head(c: ModelConfig, seed: int, device, dtype):
    if c.tied:
        return embedding(c, seed, device, dtype)
    return _normal((c.vocab, c.hidden), _gen(seed, c.layers + 1, device), 1.0, dtype)


def rms_norm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def rope_tables(c: ModelConfig, positions, device):
    """cos, sin [N, head_dim/2] (f32) for integer positions [N]."""
    hd = c.head_dim
    inv = 1.0 / (c.rope_theta ** (torch.arange(0, hd, 2, device=device, dtype=torch.float32) / hd))
    ang = positions.to(device=device, dtype=torch.float32)[:, None] * inv[None, :]
    return ang.cos(), ang.sin()


def apply_rope(x, cos, sin):
    """x [N, heads, head_dim] rotated (rotate-half convention) at the rows' positions."""
    xf = x.float()
    half = xf.shape[-1] // 2
    x1, x2 = xf[..., :half], xf[..., half:]
    c, s = cos[:, None, :], sin[:, None, :]
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1).to(x.dtype)


class StageModel:
    """The blocks [first, end) of one pipeline stage; the embedding when first == 0, the final norm
    and the lm head when end == layers."""

    def __init__(self, c: ModelConfig, seed: int, first: int, end: int, device="cpu", dtype=torch.float32):
        if not 0 <= first < end <= c.layers:
            raise ValueError(f"layers {first}:{end} are outside the model's 0:{c.layers}")
        self.c, self.first, self.end, self.device, self.dtype = c, first, end, torch.device(device), dtype
        self.is_first, self.is_last = first == 0, end == c.layers
        self.embed = embedding(c, seed, device, dtype) if self.is_first else None
        self.blocks = [Block(c, i, seed, device, dtype) for i in range(first, end)]
        if self.is_last:
            self.norm = torch.ones(c.hidden, device=device, dtype=dtype)
            self.head = self.embed if (c.tied and self.embed is not None) else lm_head(c, seed, device, dtype)
            self.logit_scale = c.hidden ** -0.5

    def embed_tokens(self, ids):
        return F.embedding(torch.as_tensor(ids, device=self.device), self.embed)

    def logits(self, x):
        """f32 logits [N, vocab] of hidden rows x [N, hidden]."""
        return F.linear(rms_norm(x, self.norm, self.c.norm_eps), self.head).float() * self.logit_scale

    def block_forward(self, i: int, x, cos, sin, attend):
        """Block i (local index) over rows x [N, hidden]; attend(i, q, k, v) stores k, v and
        returns the attention output [N, heads * head_dim]."""
        b, c = self.blocks[i], self.c
        n = x.shape[0]
        h = rms_norm(x, b.ln1, c.norm_eps)
        q = apply_rope(F.linear(h, b.wq).view(n, c.heads, c.head_dim), cos, sin)
        k = apply_rope(F.linear(h, b.wk).view(n, c.kv_heads, c.head_dim), cos, sin)
        v = F.linear(h, b.wv).view(n, c.kv_heads, c.head_dim)
        x = x + F.linear(attend(i, q, k, v), b.wo)
        h = rms_norm(x, b.ln2, c.norm_eps)
        return x + F.linear(F.silu(F.linear(h, b.w_gate)) * F.linear(h, b.w_up), b.w_down)
