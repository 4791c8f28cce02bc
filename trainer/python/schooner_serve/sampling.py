"""Deterministic token choice: token k is a pure function of (model seed, prompt, temperature,
request seed, k). Greedy (argmax) at temperature 0; otherwise Gumbel-max sampling,
argmax(logits / T + G), with G drawn from a torch.Generator seeded by step_seed(seed, k) — a
fresh generator per request and step, so no state carries from one step to the next and a
resumed request draws exactly what it would have drawn."""

from __future__ import annotations

import hashlib

import torch


def step_seed(seed: int, step: int) -> int:
    """The generator seed of step `step` of a request with seed `seed`: the first 8 bytes of
    BLAKE2b(b"<seed>:<step>") as a little-endian integer, top bit cleared."""
    d = hashlib.blake2b(b"%d:%d" % (seed, step), digest_size=8).digest()
    return int.from_bytes(d, "little") & ((1 << 63) - 1)


def choose(logits, temperature: float, seed: int, step: int) -> int:
    """The token of one request's step from its f32 logits [vocab]."""
    if temperature <= 0:
        return int(torch.argmax(logits))
    g = torch.Generator(device=logits.device)
    g.manual_seed(step_seed(seed, step))
    u = torch.rand(logits.shape[-1], generator=g, device=logits.device, dtype=torch.float32)
    gumbel = -torch.log(-torch.log(u.clamp_(min=1e-20)))
    return int(torch.argmax(logits.float() / temperature + gumbel))


def choose_rows(logits, temperatures: list[float], seeds: list[int], steps: list[int]) -> list[int]:
    """choose() of every row of logits [rows, vocab] (row i with temperatures[i], seeds[i],
    steps[i]). The greedy rows take one argmax and one copy to the host together: a decode step
    of a large batch otherwise paid a kernel launch and a device-to-host wait per row, the
    host's largest cost per sequence in a profile on an H100 (2026-12-07). torch's argmax returns the first
    of equal maxima along a dimension as over a single row, so the tokens are choose()'s."""
    greedy = [i for i, t in enumerate(temperatures) if t <= 0]
    out = [0] * len(temperatures)
    if greedy:
        rows = logits if len(greedy) == len(out) else logits[greedy]
        for i, t in zip(greedy, torch.argmax(rows, dim=-1).tolist()):
            out[i] = t
    for i, t in enumerate(temperatures):
        if t > 0:
            out[i] = choose(logits[i], t, seeds[i], steps[i])
    return out
