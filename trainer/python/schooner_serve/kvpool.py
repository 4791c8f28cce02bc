"""A paged KV pool: fixed-size blocks, per-layer K/V storage, a free list, per-request block tables.

Storage is one tensor [layers, 2, num_blocks * block + 1, kv_heads, head_dim] (K then V of every
local layer; a block is `block` consecutive slots; the last slot is a scratch slot, no block's), i.e. per layer and per K/V the
[num_blocks, block, kv_heads, head_dim] layout flattened over its first two dimensions so a slot
index (block id * block + offset) addresses one token. A request reserves, at admission, the blocks
of its whole worst case (prompt + max_tokens): it never runs out mid-decode, and admission waits
while the free list is short.
"""

from __future__ import annotations

import torch


class PoolFull(Exception):
    pass


class KVPool:
    def __init__(self, layers: int, num_blocks: int, block: int, kv_heads: int, head_dim: int,
                 dtype=torch.float32, device="cpu"):
        if num_blocks < 1 or block < 1:
            raise ValueError("the pool needs at least one block of at least one token")
        self.layers, self.num_blocks, self.block = layers, num_blocks, block
        self.kv_heads, self.head_dim = kv_heads, head_dim
        # One slot past the blocks is no request's: padded rows of a CUDA-graph decode step
        # write there (decode_graphs.py). It holds finite values only, as masked positions read it.
        self.scratch = num_blocks * block
        self.kv = torch.zeros(layers, 2, num_blocks * block + 1, kv_heads, head_dim, dtype=dtype, device=device)
        self.free = list(range(num_blocks - 1, -1, -1))  # pop() hands out block 0 first
        self.tables: dict[str, list[int]] = {}
        self.lengths: dict[str, int] = {}  # positions [0, length) hold valid KV

    @staticmethod
    def blocks_for_budget(budget_bytes: int, layers: int, block: int, kv_heads: int, head_dim: int,
                          dtype_size: int) -> int:
        per_block = layers * 2 * block * kv_heads * head_dim * dtype_size
        return max(1, budget_bytes // per_block)

    def bytes(self) -> int:
        return self.kv.numel() * self.kv.element_size()

    def blocks_needed(self, tokens: int) -> int:
        return -(-tokens // self.block)

    @property
    def num_free(self) -> int:
        return len(self.free)

    def can_allocate(self, tokens: int) -> bool:
        return self.blocks_needed(tokens) <= len(self.free)

    def allocate(self, request: str, tokens: int) -> list[int]:
        """Reserve room for `tokens` positions (grows an existing reservation)."""
        table = self.tables.get(request, [])
        more = self.blocks_needed(tokens) - len(table)
        if more > len(self.free):
            raise PoolFull(f"{request}: {more} more blocks wanted, {len(self.free)} free")
        for _ in range(max(0, more)):
            table.append(self.free.pop())
        self.tables[request] = table
        self.lengths.setdefault(request, 0)
        return table

    def release(self, request: str) -> None:
        table = self.tables.pop(request, None)
        self.lengths.pop(request, None)
        if table:
            self.free.extend(reversed(table))

    def has(self, request: str) -> bool:
        return request in self.tables

    def capacity(self, request: str) -> int:
        return len(self.tables.get(request, ())) * self.block

    def _table(self, request: str, p1: int) -> list[int]:
        """The request's block table, which must reach position p1 - 1 (PoolFull otherwise)."""
        table = self.tables[request]
        if p1 > len(table) * self.block:
            raise PoolFull(f"{request}: position {p1 - 1} is past its {len(table) * self.block} reserved slots")
        return table

    def slots(self, request: str, p0: int, p1: int) -> list[int]:
        table, b = self._table(request, p1), self.block
        return [table[p // b] * b + p % b for p in range(p0, p1)]

    def slot_index(self, request: str, p0: int, p1: int):
        """slots(request, p0, p1) as a CPU LongTensor, computed from the block table with tensor
        ops: a decode step of a long context needs every position's slot, and a Python list of
        tens of thousands of ints per sequence per step would cost more than the step's math."""
        table, b = self._table(request, p1), self.block
        pos = torch.arange(p0, p1)
        return torch.tensor(table, dtype=torch.long)[pos // b] * b + pos % b

    def attention_index(self, rows, batch: int, width: int):
        """What a decode step's rows attend to, as CPU tensors: idx [batch, width] the slots of
        positions [0, p1) of each (request, p1) row, valid [batch, width] which of them count.
        Padding (positions past p1, rows past len(rows)) points at the scratch slot; a padded row
        attends to it alone, so no row attends to nothing (which would make NaN)."""
        b = self.block
        nb = -(-width // b)
        # The rows' block tables, padded, in one tensor; then every slot at once. Built a row at
        # a time (a slot_index each) this was five tensor operations per sequence per step, the
        # host's second cost per sequence of a decode step in a profile on an H100 (2026-12-07).
        tables = []
        for r, p1 in rows:
            if p1 > width:
                raise ValueError(f"{r}: {p1} positions do not fit a width of {width}")
            k = -(-p1 // b)
            tables.append(self._table(r, p1)[:k] + [0] * (nb - k))
        tables += [[0] * nb] * (batch - len(rows))
        pos = torch.arange(width)
        idx = torch.tensor(tables, dtype=torch.long).reshape(batch, nb)[:, pos // b] * b + pos % b
        lengths = torch.tensor([p1 for _, p1 in rows] + [1] * (batch - len(rows)), dtype=torch.long)
        valid = pos[None, :] < lengths[:, None]
        real = (torch.arange(batch) < len(rows))[:, None]
        return torch.where(valid & real, idx, torch.tensor(self.scratch, dtype=torch.long)), valid

    def layer(self, l: int):
        """(K, V) of local layer l, each [num_blocks * block, kv_heads, head_dim]."""
        return self.kv[l, 0], self.kv[l, 1]
