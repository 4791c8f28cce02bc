"""Whether a checkpoint restores exactly what the trainer holds: every tensor equal bit for bit
(dtype, shape and bytes), every other value equal, no key missing or extra. The benchmark
runs it after each method's final save, so a method that is fast because it writes the wrong
thing (or nothing) cannot win the table."""

from __future__ import annotations

from typing import Any, List

import torch


def differences(want: Any, got: Any, path: str = "", limit: int = 10) -> List[str]:
    """The paths at which got differs from want (at most limit of them; empty when equal)."""
    out: List[str] = []
    _walk(want, got, path or "state", out, limit)
    return out


def _walk(want: Any, got: Any, path: str, out: List[str], limit: int) -> None:
    if len(out) >= limit:
        return
    if torch.is_tensor(want):
        if not torch.is_tensor(got):
            out.append(f"{path}: a tensor, restored as {type(got).__name__}")
        elif want.dtype != got.dtype or tuple(want.shape) != tuple(got.shape):
            out.append(f"{path}: {want.dtype}{list(want.shape)} restored as {got.dtype}{list(got.shape)}")
        elif not _same_bits(want, got):
            out.append(f"{path}: values differ")
        return
    if isinstance(want, dict):
        if not isinstance(got, dict):
            out.append(f"{path}: a dict, restored as {type(got).__name__}")
            return
        for k in want.keys() - got.keys():
            out.append(f"{path}.{k}: missing from the restore")
        for k in got.keys() - want.keys():
            out.append(f"{path}.{k}: in the restore only")
        for k in want.keys() & got.keys():
            _walk(want[k], got[k], f"{path}.{k}", out, limit)
        return
    if isinstance(want, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(want) != len(got):
            out.append(f"{path}: a sequence of {len(want)}, restored as {got!r:.60}")
            return
        for i, (w, g) in enumerate(zip(want, got)):
            _walk(w, g, f"{path}[{i}]", out, limit)
        return
    if want != got:
        out.append(f"{path}: {want!r:.60} restored as {got!r:.60}")


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal bytes, so NaNs and signed zeros count as the trainer wrote them. One tensor at a
    time crosses to the host, so a 17 GB state needs no second copy on the GPU."""
    a, b = a.detach().cpu().contiguous(), b.detach().cpu().contiguous()
    if a.numel() == 0:
        return True
    return torch.equal(a.view(-1).view(torch.uint8), b.view(-1).view(torch.uint8))
