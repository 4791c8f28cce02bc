"""CUDA graphs of the decode step: one graph per (batch bucket, context bucket), replayed.

An eager decode step of a 32-layer model launches about two thousand kernels from Python; on an
H200 the launches, not the math, set the step time (tens of milliseconds for a step whose
weights stream from HBM in a few). A graph replays the whole step's kernels in one launch.

Shapes in a graph are fixed, so a step is padded: the batch up to a power of two, the context
(how many cached positions a row attends to) up to a power of two of at least MIN_CONTEXT.
Padded rows write their K/V to the pool's scratch slot, which no request owns, and attend to it
alone; padded positions of real rows point at it and are masked out. Rows never mix (every op is
per row), so padding changes nothing for the real rows — as long as the scratch slot stays
finite: a masked position weighs 0, and 0 × NaN would still be NaN. So no row of a graph ever
attends to nothing (which would make NaN there, and write it to the slot). A graph is captured the first time its
bucket is used (about two eager steps' time), or ahead of time with prepare(): a replacement
stage that knows its batch and context captures before it is needed, as it loads its weights.
"""

from __future__ import annotations

import inspect

import torch

from .model import rope_tables

MIN_CONTEXT = 256


def decode_attention(q, kf, vf, idx, valid, c):
    """One new query row per sequence q [B, heads, hd] over the positions idx [B, S] (slots of the
    pool's K/V kf, vf [slots, kv_heads, hd]) that valid [B, S] lets it see."""
    b = q.shape[0]
    groups, scale = c.heads // c.kv_heads, c.head_dim ** -0.5
    qg = q.view(b, c.kv_heads, groups, c.head_dim)
    kk = kf[idx].permute(0, 2, 3, 1)  # [B, kvh, hd, S]
    vv = vf[idx].permute(0, 2, 1, 3)  # [B, kvh, S, hd]
    s = torch.matmul(qg, kk).float() * scale  # [B, kvh, G, S]
    s.masked_fill_(~valid[:, None, None, :], float("-inf"))
    o = torch.matmul(torch.softmax(s, -1).to(vv.dtype), vv)  # [B, kvh, G, hd]
    return o.reshape(b, c.heads * c.head_dim)


def bucket(n: int, least: int = 1) -> int:
    p = least
    while p < n:
        p *= 2
    return p


# How _Graph captures where torch can (see there why): only the capturing thread is restricted.
_THREAD_LOCAL_CAPTURE = ({"capture_error_mode": "thread_local"}
                         if "capture_error_mode" in inspect.signature(torch.cuda.graph.__init__).parameters else {})


class _Graph:
    def __init__(self, engine, batch: int, context: int, scratch: int, mempool):
        m, c, dev = engine.model, engine.c, engine.device
        self.batch, self.context = batch, context
        if m.is_first:
            self.x = torch.zeros(batch, dtype=torch.long, device=dev)
        else:
            self.x = torch.zeros(batch, c.hidden, dtype=engine.dtype, device=dev)
        self.pos = torch.zeros(batch, dtype=torch.long, device=dev)
        self.wslots = torch.full((batch,), scratch, dtype=torch.long, device=dev)
        self.idx = torch.full((batch, context), scratch, dtype=torch.long, device=dev)
        self.valid = torch.zeros(batch, context, dtype=torch.bool, device=dev)
        self.valid[:, 0] = True  # every row attends to something: the scratch slot stays finite
        side = torch.cuda.Stream(device=dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(side):  # warm-up outside the graph: lazy initialisations happen here
            for _ in range(2):
                self._step(engine)
        torch.cuda.current_stream(dev).wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        # thread_local: a graph is captured lazily, at the first step of a new batch bucket,
        # while the replication sender may be waiting on an earlier step's copy event in its own
        # thread. In the default ("global") mode that wait is refused during any capture and
        # invalidates it: on an H100 (2026-12-06, bench_preload at 2k x 8) the capture failed
        # and took the engine down. The sender only waits on events of other streams and reads
        # host memory, so letting other threads call CUDA during the capture is safe (torch
        # before 2.1 has no such mode and captures as before).
        with torch.cuda.graph(self.graph, pool=mempool, **_THREAD_LOCAL_CAPTURE):
            self.out = self._step(engine)

    def _step(self, engine):
        m, c, pool = engine.model, engine.c, engine.pool
        x = m.embed_tokens(self.x) if m.is_first else self.x
        cos, sin = rope_tables(c, self.pos, engine.device)

        def attend(i, q, k, v):
            kf, vf = pool.layer(i)
            kf[self.wslots] = k
            vf[self.wslots] = v
            return decode_attention(q, kf, vf, self.idx, self.valid, c)

        for i in range(len(m.blocks)):
            x = m.block_forward(i, x, cos, sin, attend)
        return x


class DecodeGraphs:
    """The decode graphs of one StageEngine (they capture its pool's and weights' addresses)."""

    def __init__(self, engine):
        self.engine = engine
        self.scratch = engine.pool.scratch
        self.graphs: dict[tuple[int, int], _Graph] = {}
        self.mempool = torch.cuda.graph_pool_handle()
        self.captures = 0

    def graph(self, batch: int, context: int) -> _Graph:
        key = (bucket(batch), bucket(context, MIN_CONTEXT))
        g = self.graphs.get(key)
        if g is None:
            g = self.graphs[key] = _Graph(self.engine, key[0], key[1], self.scratch, self.mempool)
            self.captures += 1
        return g

    def prepare(self, batches, contexts) -> None:
        """Capture now the graphs of steps of each of `batches` sequences at each of `contexts`
        cached positions (their buckets), so no step pays for a capture later."""
        for b in batches:
            for s in contexts:
                self.graph(b, s)

    def run(self, x, rows: list[tuple[str, int]], slots: list[int]):
        """One decode step: x the rows' inputs (token ids at the first stage, else hidden states
        [B, hidden]); rows (request, p1) with the new token at position p1 - 1, written to slots.
        Returns the hidden states [B, hidden] (a copy: the next replay reuses the graph's), with
        the replay queued, not waited for."""
        pool, dev = self.engine.pool, self.engine.device
        b = len(rows)
        g = self.graph(b, max(p1 for _, p1 in rows))
        idx, valid = pool.attention_index(rows, g.batch, g.context)
        pos = torch.zeros(g.batch, dtype=torch.long)
        pos[:b] = torch.tensor([p1 - 1 for _, p1 in rows])
        wslots = torch.full((g.batch,), self.scratch, dtype=torch.long)
        wslots[:b] = torch.tensor(slots)
        g.idx.copy_(idx.pin_memory(), non_blocking=True)
        g.valid.copy_(valid.pin_memory(), non_blocking=True)
        g.pos.copy_(pos, non_blocking=True)
        g.wslots.copy_(wslots, non_blocking=True)
        if torch.is_tensor(x):
            g.x[:b].copy_(x.to(device=dev, dtype=g.x.dtype), non_blocking=True)
        else:
            g.x[:b].copy_(torch.as_tensor(x, dtype=torch.long), non_blocking=True)
        g.graph.replay()
        return g.out[:b].clone()
