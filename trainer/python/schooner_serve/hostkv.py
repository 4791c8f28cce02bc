"""Host memory for swapped-out KV caches: one pinned (page-locked) tensor, a region per request.

A region holds a request's positions position-major, [positions, layers, 2, kv_heads, head_dim],
so positions [a, b) of a request are one contiguous piece: a swap-in is one host-to-device copy
per request and a swap-out of a decode step's new position one small copy, where the GPU pool's
block layout ([layers, 2, slots, ...]) would need a strided copy per layer and block. A region
is sized at admission for the request's whole reservation (prompt + max_tokens), as the GPU
pool reserves, so a swapped request never runs out of host room mid-decode. Regions are first
fit over a list of free extents; freed extents merge with their neighbours.
"""

from __future__ import annotations

import bisect

import torch

from .kvpool import PoolFull


class HostFull(PoolFull):
    """The host pool has no free extent large enough for a request's reservation."""


class HostKV:
    def __init__(self, layers: int, positions: int, kv_heads: int, head_dim: int, dtype, pin: bool):
        if positions < 1:
            raise ValueError("the host KV pool needs at least one position")
        self.positions = positions
        # Pinned on a CUDA machine: page-locked memory is what a copy on a side stream can
        # overlap with compute (pageable memory makes the copy synchronous).
        self.data = torch.zeros(positions, layers, 2, kv_heads, head_dim, dtype=dtype, pin_memory=pin)
        self.free: list[tuple[int, int]] = [(0, positions)]  # (start, length), sorted by start
        self.regions: dict[str, tuple[int, int]] = {}  # request -> (start, capacity)

    @staticmethod
    def positions_for_budget(budget_bytes: int, layers: int, kv_heads: int, head_dim: int, dtype_size: int) -> int:
        return max(1, budget_bytes // (layers * 2 * kv_heads * head_dim * dtype_size))

    @property
    def num_free(self) -> int:
        return sum(n for _, n in self.free)

    def has(self, request: str) -> bool:
        return request in self.regions

    def allocate(self, request: str, positions: int) -> None:
        """A region of at least `positions` for the request; a larger one replaces a smaller
        (its contents moved). HostFull when no free extent is large enough."""
        old = self.regions.get(request)
        if old is not None and old[1] >= positions:
            return
        for i, (s, n) in enumerate(self.free):
            if n >= positions:
                if n == positions:
                    del self.free[i]
                else:
                    self.free[i] = (s + positions, n - positions)
                self.regions[request] = (s, positions)
                if old is not None:
                    self.data[s:s + old[1]].copy_(self.data[old[0]:old[0] + old[1]])
                    self._give(old)
                return
        raise HostFull(f"{request}: {positions} positions wanted in host memory, largest free extent "
                       f"{max((n for _, n in self.free), default=0)} of {self.num_free} free")

    def release(self, request: str) -> None:
        r = self.regions.pop(request, None)
        if r is not None:
            self._give(r)

    def _give(self, extent: tuple[int, int]) -> None:
        i = bisect.bisect(self.free, extent)
        self.free.insert(i, extent)
        # Merge with the following, then the preceding, extent where they touch.
        if i + 1 < len(self.free) and self.free[i][0] + self.free[i][1] == self.free[i + 1][0]:
            self.free[i] = (self.free[i][0], self.free[i][1] + self.free.pop(i + 1)[1])
        if i > 0 and self.free[i - 1][0] + self.free[i - 1][1] == self.free[i][0]:
            self.free[i - 1] = (self.free[i - 1][0], self.free[i - 1][1] + self.free.pop(i)[1])

    def view(self, request: str, a: int, b: int):
        """Positions [a, b) of the request's region: [b - a, layers, 2, kv_heads, head_dim]."""
        s, cap = self.regions[request]
        if not 0 <= a <= b <= cap:
            raise IndexError(f"{request}: positions {a}:{b} outside its host region of {cap}")
        return self.data[s + a:s + b]
