"""Microbatch swapping (DéjàVu): the KV caches of requests not in the current step live in host
memory (hostkv.HostKV); a step's requests are swapped into the GPU pool (kvpool.KVPool) before
it, the next microbatch's while the current one computes, and requests are swapped out as their
GPU pages are wanted by others. So a stage holds more sequences than its GPU KV pool: the GPU
needs room for the microbatch computing and the one being fetched, not for every microbatch in
flight (docs/serving.md, "Microbatch swapping", says where the gain comes from).

Every admitted request has a host region (its whole reservation); some are also resident in
the GPU pool. A request's positions [0, on_host) are valid in host memory; a resident one's
newer positions are only in the GPU pool until it is evicted, when just those are copied out
(a decode step adds one position, so a swap-out is small; the swap-in of a whole context is
what costs). Eviction takes the most recently used residents first, never the step's own
requests or the prefetched ones: microbatches take their turns in a fixed cycle, and for a
cycle longer than the pool holds, least-recently-used eviction would evict each microbatch just
before its turn (every step a full swap-in), where most-recently-used eviction keeps all but
one slot's worth resident for good and swaps the rest through it (Belady's choice for a loop).
With room for every microbatch nothing is ever swapped; with room for C of N, N - C + 1 of them
are swapped in per round.

On a GPU the copies run on a side stream: the side stream first waits for the compute issued
so far (a freed page may still be read by it), and the compute stream waits for the side
stream's swap-ins before a step that uses them, so a prefetch overlaps the step computing when
it is issued. Host memory is pinned, or the copies would be synchronous. On a CPU the same code
makes plain copies (there is nothing to overlap), so tests run the mechanism.
"""

from __future__ import annotations

import collections

import torch

from .hostkv import HostKV
from .kvpool import KVPool, PoolFull


class Swapper:
    def __init__(self, pool: KVPool, host: HostKV, device):
        self.pool, self.host, self.device = pool, host, torch.device(device)
        self.cuda = self.device.type == "cuda"
        self.side = torch.cuda.Stream(self.device) if self.cuda else None
        self.length: dict[str, int] = {}  # a swapped-out request's positions
        self.on_host: dict[str, int] = {}  # positions [0, n) valid in host memory
        self.resident: collections.OrderedDict = collections.OrderedDict()  # most recently used last
        self.ready: dict[str, object] = {}  # resident request -> the side stream's event of its swap-in
        self.current: set = set()  # the step's requests: not evicted by its prefetch
        self.stats = {"swap_ins": 0, "swap_outs": 0, "in_bytes": 0, "out_bytes": 0, "evictions": 0,
                      "prefetches": 0, "prefetch_skipped": 0, "sync_ins": 0}
        self._per_pos = pool.layers * 2 * pool.kv_heads * pool.head_dim * pool.kv.element_size()

    def holds(self, request: str) -> bool:
        return self.host.has(request)

    def requests(self) -> list[str]:
        return list(self.host.regions)

    def length_of(self, request: str) -> int:
        if request in self.resident:
            return self.pool.lengths.get(request, 0)
        return self.length.get(request, 0)

    def admit(self, request: str, reserve: int) -> None:
        """A host region for the request's reservation (HostFull, a PoolFull, when there is none);
        the GPU pool is asked for pages only when a step uses it."""
        new = not self.host.has(request)
        if not new and self.host.regions[request][1] < reserve:
            self.sync()  # a larger region copies the old one on the host: its swap-outs must have landed
        self.host.allocate(request, reserve)
        if new:
            self.length[request], self.on_host[request] = 0, 0

    def release(self, request: str) -> None:
        """Forget the request (the caller frees its GPU pages). A swap-out of it still in flight
        only writes its own region, which nothing reuses before the side stream is past it:
        every swap-in is issued on the same stream."""
        self.host.release(request)
        self.length.pop(request, None)
        self.on_host.pop(request, None)
        self.resident.pop(request, None)
        self.ready.pop(request, None)
        self.current.discard(request)

    def blocks_for(self, rows: list[tuple[str, int]]) -> int:
        """GPU blocks the rows (request, positions it needs) take once resident."""
        return sum(self.pool.blocks_needed(p1) for _, p1 in rows)

    def ensure(self, rows: list[tuple[str, int]]) -> None:
        """Make the step's rows (request, positions [0, p1) it needs room for) resident, evicting
        others as needed, and have the compute stream wait for their swap-ins. PoolFull when the
        step alone needs more blocks than the GPU pool has."""
        self.current = {r for r, _ in rows}
        # Swap-ins the step waits for in full: no prefetch brought them (none was given, or it
        # did not fit beside the step before).
        self.stats["sync_ins"] += self._bring(rows, protect=self.current, strict=True)
        if self.cuda:
            events = {id(e): e for e in (self.ready.pop(r, None) for r, _ in rows) if e is not None}
            for e in events.values():
                torch.cuda.current_stream(self.device).wait_event(e)
        for r, _ in rows:
            self.resident.move_to_end(r)

    def prefetch(self, rows: list[tuple[str, int]], after=None) -> bool:
        """Start swapping in the next step's rows now, beside the current step's compute. Best
        effort: False (and nothing fetched) when they do not fit beside the current step's; the
        next ensure then fetches them itself. after: a CUDA event recorded before the current
        step's compute; the copies wait for it instead of for everything queued so far (the
        current step's rows are protected, so its compute touches none of their pages)."""
        rows = [(r, p1) for r, p1 in rows if self.host.has(r)]
        if not rows:
            return True
        if self.blocks_for(rows) + self.blocks_for([(r, self.pool.capacity(r)) for r in self.current
                                                    if r not in {x for x, _ in rows}]) > self.pool.num_blocks:
            self.stats["prefetch_skipped"] += 1
            return False
        try:
            self._bring(rows, protect=self.current | {r for r, _ in rows}, strict=False, after=after)
        except PoolFull:
            self.stats["prefetch_skipped"] += 1
            return False
        self.stats["prefetches"] += 1
        return True

    def _bring(self, rows, protect: set, strict: bool, after=None) -> int:
        """Make rows resident (evicting unprotected residents); returns how many were swapped in.
        The copies wait for the compute queued so far, or only for the event after if given."""
        need = 0
        for r, p1 in rows:
            if not self.host.has(r):
                raise PoolFull(f"{r}: not admitted to the swap pool")
            need += max(0, self.pool.blocks_needed(p1) - len(self.pool.tables.get(r, ())))
        if self.blocks_for(rows) > self.pool.num_blocks:
            raise PoolFull(f"the step's {len(rows)} sequences need {self.blocks_for(rows)} KV blocks; "
                           f"the GPU pool has {self.pool.num_blocks}")
        victims = [r for r in reversed(self.resident) if r not in protect]  # most recently used first
        out = []
        while need > self.pool.num_free and victims:
            out.append(victims.pop(0))
            need -= len(self.pool.tables.get(out[-1], ()))  # what its eviction gives back
        if need > self.pool.num_free and not strict:
            raise PoolFull("no room to prefetch")
        if self.cuda:
            # Pages being freed or filled may still be read by compute issued before now (or
            # before after: what follows it touches only protected rows' pages).
            if after is not None:
                self.side.wait_event(after)
            else:
                self.side.wait_stream(torch.cuda.current_stream(self.device))
        if out:
            self._evict(out)
        fetch = []
        for r, p1 in rows:
            if r not in self.resident:
                self.pool.allocate(r, p1)
                self.pool.lengths[r] = self.length.pop(r, 0)
                self.resident[r] = None
                if self.on_host[r] > 0:
                    fetch.append(r)
            else:
                self.pool.allocate(r, p1)
        if fetch:
            self._swap_in(fetch)
        if self.cuda:
            # Every row waits for all of it: a page given to a row (a fetched request's, or one
            # more for a resident request's next position) may be one an eviction still reads.
            ev = torch.cuda.Event()
            ev.record(self.side)
            for r, _ in rows:
                self.ready[r] = ev
        return len(fetch)

    def _evict(self, reqs: list[str]) -> None:
        """Copy the resident requests' positions not yet in host memory out (one gather of them
        all on the device, then one device-to-host copy per request into its region) and free
        their pages."""
        spans = [(r, self.on_host[r], self.pool.lengths.get(r, 0)) for r in reqs]
        copy = [(r, a, n) for r, a, n in spans if n > a]
        if copy:
            with self._on_side():
                idx = torch.cat([self.pool.slot_index(r, a, n) for r, a, n in copy]).to(self.device, non_blocking=True)
                src = self.pool.kv[:, :, idx].permute(2, 0, 1, 3, 4).contiguous()  # [positions, layers, 2, kvh, hd]
                o = 0
                for r, a, n in copy:
                    self.host.view(r, a, n).copy_(src[o:o + n - a], non_blocking=True)
                    o += n - a
            self.stats["swap_outs"] += len(copy)
            self.stats["out_bytes"] += sum(n - a for _, a, n in copy) * self._per_pos
        for r, _, n in spans:
            self.on_host[r], self.length[r] = n, n
            self.pool.release(r)
            self.resident.pop(r, None)
            self.ready.pop(r, None)
        self.stats["evictions"] += len(reqs)

    def _swap_in(self, reqs: list[str]) -> None:
        """One host-to-device copy per request into one staging buffer, then one scatter into
        their pages, on the side stream."""
        sizes = [self.on_host[r] for r in reqs]
        with self._on_side():
            first = self.host.view(reqs[0], 0, 1)
            buf = torch.empty((sum(sizes),) + tuple(first.shape[1:]), dtype=first.dtype, device=self.device)
            o = 0
            for r, n in zip(reqs, sizes):
                buf[o:o + n].copy_(self.host.view(r, 0, n), non_blocking=True)
                o += n
            idx = torch.cat([self.pool.slot_index(r, 0, n) for r, n in zip(reqs, sizes)])
            self.pool.kv[:, :, idx.to(self.device, non_blocking=True)] = buf.permute(1, 2, 0, 3, 4)
        self.stats["swap_ins"] += len(reqs)
        self.stats["in_bytes"] += sum(sizes) * self._per_pos

    def _on_side(self):
        if self.cuda:
            return torch.cuda.stream(self.side)
        return _Nothing()

    def sync(self) -> None:
        """Wait for every copy issued (before host memory is read by the host)."""
        if self.cuda:
            self.side.synchronize()


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
