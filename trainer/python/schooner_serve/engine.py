"""One pipeline stage's compute: its slice of the model, its paged KV pool, attention over the
pool, sampling at the last stage, replication to a KV-cache holder and restore from one.

A forward is a list of entries {"request", "step", "positions": [p0, p1]} over rows of hidden
states (the first stage: token ids) — the `forward` frame of docs/serving-protocol.md §2. A
prefill entry covers many positions (and may start after a cached prefix); a decode entry one.
"""

from __future__ import annotations

import os
import threading
import time

import torch

from .config import ModelConfig
from .hostkv import HostKV
from .kvpool import KVPool, PoolFull
from .model import StageModel, rope_tables
from .decode_graphs import DecodeGraphs, decode_attention
from .replicate import HolderWriter, LentReader, fetch_replica
from .restore_stream import ChunkPlacer, PlacementError, RestoreSlots, StreamedScatter, pool_order
from .sampling import choose_rows
from .swap import Swapper
from .preload import Fetched


class RestoreFailed(Exception):
    pass


# The most a stage lends its holder by default (SCHOONER_KV_LEND overrides): page-locked host
# memory the size of one large replica (a 32k-token request of an 8B model's 32 layers is 4 GiB).
LEND_DEFAULT_MAX = 8 << 30


class StageEngine:
    def __init__(self, c: ModelConfig, seed: int, first: int, end: int, *, device="cpu", dtype=None,
                 kv_blocks: int | None = None, kv_mem: int | None = None, block: int = 16,
                 holder: str | None = None, replicate: bool = True, deployment: str = "default",
                 stage: int = 0, queue_size: int = 64, model: StageModel | None = None,
                 restore_wait_s: float = 0.0, swap_host: int | None = None):
        device = torch.device(device)
        if dtype is None:
            dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
        self.c, self.seed, self.first, self.end = c, seed, first, end
        self.device, self.dtype = device, dtype
        self.model = model if model is not None else StageModel(c, seed, first, end, device, dtype)
        local = end - first
        esize = torch.tensor([], dtype=dtype).element_size()
        if kv_blocks is None:
            kv_blocks = KVPool.blocks_for_budget(kv_mem or (64 << 20), local, block, c.kv_heads, c.head_dim, esize)
        self.pool = KVPool(local, kv_blocks, block, c.kv_heads, c.head_dim, dtype, device)
        # Microbatch swapping (swap.py): with swap_host bytes of host memory, requests are
        # admitted there and hold GPU pages only while a step uses them.
        self.swap = None
        if swap_host:
            host = HostKV(local, HostKV.positions_for_budget(swap_host, local, c.kv_heads, c.head_dim, esize),
                          c.kv_heads, c.head_dim, dtype, pin=device.type == "cuda")
            self.swap = Swapper(self.pool, host, device)
        self.params: dict[str, dict] = {}
        self.holder, self.deployment, self.stage = holder, deployment, stage
        self._replicate, self._queue_size = replicate, queue_size
        # A restore's get may wait this long while the stage this one replaces is still
        # streaming the request's prompt to the holder (a handover on a notice).
        self.restore_wait_ms = int(restore_wait_s * 1000)
        self._holder_retry_at, self._prober, self._probed = 0.0, None, None
        self.writer = self._writer(holder) if holder and replicate else None
        self.restore_stats: list[dict] = []
        self.restore_source = ""  # where the last restore's positions came from (restore)
        # Requests preloaded ahead of a switch (preload.py), until a restore takes them up.
        self.preloaded: dict = {}
        self.reader = self._lend()
        # Decode steps replay CUDA graphs on a GPU (SCHOONER_CUDA_GRAPHS=0: eager, as on a CPU).
        graphs = device.type == "cuda" and os.environ.get("SCHOONER_CUDA_GRAPHS", "1") != "0"
        self.graphs = DecodeGraphs(self) if graphs else None

    def _writer(self, addr: str, quiet: bool = False) -> HolderWriter | None:
        """A writer to the holder at addr; None, said on stdout, where it cannot be reached. A
        stage started or told a holder that is gone (a replacement given the address of a
        neighbour's machine that migrated meanwhile) then serves without replicating until its
        node agent tells it the current holder (set_holder), which re-sends every request's
        cache in full: it used to die at start, and was replaced again."""
        try:
            w = HolderWriter(addr, self.deployment, self.stage, self._queue_size)
        except OSError as e:
            if not quiet:
                print(f"schooner_serve: KV-cache holder {addr}: {e}; not replicating until it answers "
                      "or another is given", flush=True)
            return None
        if quiet:
            print(f"schooner_serve: KV-cache holder {addr} answers again: replicating", flush=True)
        return w

    def _lend(self) -> LentReader | None:
        """A LentReader on a holder over a unix socket, made now so a restore finds its memory
        mapped and page-locked: SCHOONER_KV_LEND bytes (default the KV pool's size, at most
        LEND_DEFAULT_MAX; 0 turns it off). None, and restores fetch as fetch_replica does, where
        lending is off or fails (said on stdout)."""
        if not self.holder or not self.holder.startswith("unix:"):
            return None
        want = os.environ.get("SCHOONER_KV_LEND")
        size = int(want) if want else min(self.pool.bytes(), LEND_DEFAULT_MAX)
        if size <= 0:
            return None
        try:
            reader = LentReader(self.holder, self.deployment, self.stage, size, self.device, arena=self._want_arena())
        except Exception as e:  # noqa: BLE001 — restores still work, through a memory file each
            print(f"schooner_serve: lending {size} bytes to {self.holder}: {e}; restores map a file each", flush=True)
            return None
        if getattr(self, "restore_slots", None) is None:
            self.restore_slots = RestoreSlots(self.device)
        return reader

    def _want_arena(self) -> bool:
        """Whether to ask the holder for its arena (restores without the holder's copy of the
        prompt): SCHOONER_KV_ARENA=1 or 0, by default on a CUDA device only (the holder commits
        its whole budget when it makes the arena; on a CPU the copy it saves is small beside
        the compute)."""
        want = os.environ.get("SCHOONER_KV_ARENA")
        if want is not None:
            return want == "1"
        return self.device.type == "cuda"

    def close(self) -> None:
        """Stop replicating and give back the lent memory (the replicas stay with the holder)."""
        if self.writer is not None:
            self.writer.close()
        probed, self._probed = self._probed, None
        if probed is not None:
            probed[1].close()
        if self.reader is not None:
            self.reader.close()
            self.reader = None

    def set_holder(self, addr: str) -> None:
        """Replicate to the holder at addr from now on (the successor's node changed): the old
        writer is closed and every request's cache held here is sent to the new holder in full,
        ahead of its next put_step, so the new replica has no gap."""
        old, self.holder = self.writer, addr
        replicate = old is not None or self._replicate
        if old is not None:
            old.close()
        self.writer = self._writer(addr) if replicate else None
        if self.reader is not None:
            self.reader.close()
        self.reader = self._lend()
        self._resend()

    def _resend(self) -> None:
        """Every request's cache held here, in full, to the writer's holder (a new one)."""
        if self.writer is None:
            return
        if self.swap is not None:
            self.swap.sync()  # swap-outs still copying to the host regions read below
        for request in (self.swap.requests() if self.swap is not None else list(self.pool.tables)):
            n = self.length_of(request)
            p = self.params.get(request)
            if n <= 0 or p is None:
                continue
            prompt = p["reserve"] - p["max_tokens"]
            swapped = not self.pool.has(request)  # swapped out: its cache is in host memory
            if swapped:
                host = self.swap.host.view(request, 0, n)
            else:
                slots = torch.tensor(self.pool.slots(request, 0, n), device=self.device)
            for i, layer in enumerate(range(self.first, self.end)):
                if swapped:
                    k, v = host[:, i, 0], host[:, i, 1]
                else:
                    k, v = self.pool.kv[i, 0, slots], self.pool.kv[i, 1, slots]
                last = layer == self.end - 1
                self.writer.put_prompt(request, layer, 0, n, k, v, last=last,
                                       layers=(self.first, self.end), step=max(n - prompt, 0))

    @property
    def is_first(self):
        return self.model.is_first

    @property
    def is_last(self):
        return self.model.is_last

    # --- requests ---------------------------------------------------------------------------

    def begin(self, request: str, reserve: int, params: dict | None = None) -> None:
        """Reserve the KV room of a request (prompt + max_tokens positions) and note its sampling
        parameters; PoolFull when the free list is short."""
        self._retry_holder()
        if self.preloaded.pop(request, None) is not None:
            self.pool.release(request)  # recomputed after all: as if never preloaded
        if params is not None:
            self.params[request] = params
        if self.swap is not None:
            self.swap.admit(request, reserve)
            return
        self.pool.allocate(request, reserve)

    def holds(self, request: str) -> bool:
        """Whether the request is admitted here (in the GPU pool, or swapped out)."""
        return self.pool.has(request) or (self.swap is not None and self.swap.holds(request))

    def length_of(self, request: str) -> int:
        """Positions of the request's KV cache present here, resident or swapped out."""
        if self.swap is not None:
            return self.swap.length_of(request)
        return self.pool.lengths.get(request, 0)

    def _retry_holder(self) -> None:
        """Where the holder could not be reached, try it again, at most once a second, from a
        thread (a connect to a machine that is gone can take its whole timeout): a holder back
        at the same address (its node agent restarted) gets no new address from the agent, so
        nothing else would bring replication back. A writer the thread made is taken up here,
        as a request begins, and every cache held is sent to it in full."""
        if self.writer is not None or not self._replicate or not self.holder:
            return
        probed, self._probed = self._probed, None
        if probed is not None:
            addr, w = probed
            if addr == self.holder:
                self.writer = w
                self._resend()
                return
            w.close()  # set_holder named another meanwhile
        now = time.monotonic()
        if now < self._holder_retry_at or (self._prober is not None and self._prober.is_alive()):
            return
        self._holder_retry_at = now + 1.0
        addr = self.holder

        def probe():
            w = self._writer(addr, quiet=True)
            if w is not None:
                self._probed = (addr, w)

        self._prober = threading.Thread(target=probe, name="kv-holder-retry", daemon=True)
        self._prober.start()

    def release(self, request: str, keep_replica: bool = False) -> None:
        """Frees the request's pages and parameters here and drops its replica on the holder,
        unless keep_replica (a prompt handed off to a token engine, which restores it: the puts
        still queued hold their own copies of the KV, so the pages may be reused at once)."""
        known = self.holds(request) or request in self.params
        self.preloaded.pop(request, None)
        self.pool.release(request)
        if self.swap is not None:
            self.swap.release(request)
        self.params.pop(request, None)
        if known and self.writer is not None and not keep_replica:
            self.writer.drop(request)

    def restore(self, request: str, need: int, reserve: int, params: dict | None = None,
                expect: bool = False) -> int:
        """Make as much as possible of positions [0, need) of the request's KV present: kept when
        this process still holds them (a surviving stage), else fetched from the holder — no
        recomputation. Returns how many positions from 0 are present now (`have` <= need; the
        replica of a request acked to step a holds P + a of them, 0 when it holds nothing
        complete); the request then resumes from the smallest `have` of all its stages.
        RestoreFailed when the KV pool has no room or the replica does not fit this stage. With
        expect (a token engine taking a request from a prompt engine, disagg.py) the holder holds
        the get until the prompt is complete, at most restore_wait_s, whether or not its writer
        is sending yet. A request preloaded before a switch (preload.py) fetches only the steps
        after what it holds (a get from a step) and places them from there."""
        if params is not None:
            self.params[request] = params
        pre = self.preloaded.pop(request, None)
        kept = self.holds(request)
        # Where this restore's positions came from, for a failure's message (restore_source).
        self.restore_source = "preloaded" if pre is not None else "kept" if kept else "holder"
        if self.swap is not None:
            # Swapping: the request is made resident for its whole reservation (a swapped-out
            # survivor's cache swapped in), placed into as without swapping, and swapped out as
            # any other once its pages are wanted.
            room = max(reserve, need + 1)
            try:
                self.swap.admit(request, room)
                self.swap.ensure([(request, room)])
            except PoolFull as e:
                raise RestoreFailed(str(e)) from e
        if kept:
            have = min(self.pool.lengths.get(request, 0), need)
            try:
                self.pool.allocate(request, max(reserve, need + 1))
            except PoolFull as e:
                raise RestoreFailed(str(e)) from e
            self.pool.lengths[request] = have
            if pre is not None and have < need and self.holder:
                # The stage this one replaces may still be sending the last steps (it flushes
                # once stopped): wait, as long as it sends, for the step that completes `need`.
                have = self.fetch_into_pool(request, need, expect, start=have, from_step=pre.step_after(have),
                                            want_step=need - pre.prompt).have
            return have
        try:
            self.pool.allocate(request, max(reserve, need + 1))
        except PoolFull as e:
            raise RestoreFailed(str(e)) from e
        if not self.holder:
            self.restore_source = "no holder"
            return 0
        got = self.fetch_into_pool(request, need, expect, wait_ms=self.restore_wait_ms)
        have = got.have
        if have == 0:
            self.restore_source = f"holder {self.holder}: " + ("no replica (or no answer)" if got.top == 0 else
                                                              f"a replica acked to step {got.acked}, up to position {got.top}")
        if self.swap is not None and self.device.type == "cuda":
            # The streamed scatter may still write the pages; an eviction must read them after.
            torch.cuda.synchronize(self.device)
        return have

    def fetch_into_pool(self, request: str, need: int, expect: bool = False, start: int = 0, from_step: int = 0,
                        wait_ms: int | None = None, want_step: int = 0, timeout: float | None = None) -> "Fetched":
        """Fetch the request's replica (from from_step's position on when > 0) and place it into
        its pages, positions [start, need) (the request's pages must be allocated). Returns what
        was placed; positions [0, start) are taken as present, so `have` >= start even when the
        holder answers nothing (or cannot be reached, or is silent longer than timeout: said on
        stdout). RestoreFailed when the replica does not fit this stage."""
        if wait_ms is None:
            wait_ms = self.restore_wait_ms
        t = time.perf_counter()
        streamed = None
        if self.reader is not None:
            try:
                streamed = StreamedScatter(self.pool, request, self.first, self.end, need, self.restore_slots, start)
                rep = self.reader.fetch(request, on_filled=streamed.landed, wait_ms=wait_ms, expect=expect,
                                        from_step=from_step, want_step=want_step, timeout=timeout)
                if not rep.lent:
                    streamed = None  # larger than the lent memory: it came in a memory file
            except Exception as e:  # noqa: BLE001 — the memory-file path may still answer
                print(f"schooner_serve: restoring {request} through lent memory: {e}; without it from now on", flush=True)
                if streamed is not None:
                    streamed.abandon()
                streamed = None
                self.reader.close()
                self.reader = None
        if self.reader is None:
            try:
                rep = fetch_replica(self.holder, self.deployment, self.stage, request, wait_ms=wait_ms,
                                    expect=expect, from_step=from_step, want_step=want_step, timeout=timeout)
            except Exception as e:  # noqa: BLE001 — a holder that cannot answer has nothing to restore
                print(f"schooner_serve: restoring {request} from {self.holder}: {e}", flush=True)
                self.pool.lengths[request] = start
                return Fetched(start, -1, 0)
        t_fetch = time.perf_counter() - t
        shm, nbytes, arena = rep.shm, rep.nbytes, bool(rep.arena_chunks)
        try:
            if streamed is not None:
                # Placed as the chunks landed: wait only for the copies out of the lent memory.
                t2 = time.perf_counter()
                try:
                    have = streamed.finish()
                except PlacementError as e:
                    raise RestoreFailed(str(e)) from e
                t_h2d, t_scatter, top = time.perf_counter() - t2, 0.0, streamed.placer.top
            else:
                have, t_h2d, t_scatter, top = self._place(request, rep, need, start)
        finally:
            rep.close()
        self.pool.lengths[request] = have
        self.restore_stats.append({"request": request, "positions": have, "acked_step": rep.acked, "fetch_s": t_fetch,
                                   "h2d_s": t_h2d, "scatter_s": t_scatter, "shm": shm, "lent": rep.lent,
                                   "streamed": streamed is not None, "arena": arena, "bytes": nbytes,
                                   "start": start, "from_step": from_step, "holder_from_step": rep.from_step,
                                   "place_s": streamed.place_s if streamed is not None else 0.0,
                                   "pieces": streamed.pieces if streamed is not None else 0,
                                   "slot_copies": streamed.slot_copies if streamed is not None else 0,
                                   "total_s": time.perf_counter() - t})
        return Fetched(have, rep.acked, top)

    def _place(self, request: str, rep, need: int, start: int = 0):
        """A whole fetched replica into the request's pages from position start on: on a GPU one
        copy of a mapped file to the device, then one gather of every chunk's part and one
        scatter (per-chunk scatters cost a launch and a strided copy each). Returns (positions
        placed, h2d s, scatter s, the replica's last position)."""
        chunks, t_h2d = rep.chunks, 0.0
        if rep.shm and self.device.type == "cuda" and rep.buffer is not None and rep.buffer.numel():
            t2 = time.perf_counter()
            dev = self._h2d(rep.buffer, pinned=rep.lent and self.reader is not None and self.reader.pinned)
            t_h2d = time.perf_counter() - t2
            chunks = [(ls, ts, dev[o:o + n].view(c.dtype).view(c.shape))
                      for (ls, ts, c), (o, n) in zip(rep.chunks, rep.spans)]
        t_scatter = time.perf_counter()
        placer, nl = ChunkPlacer(self.first, self.end, need, request, start), self.end - self.first
        runs = [(data, run) for ls, ts, data in chunks for run in placer.take(ls, ts)]
        try:
            placer.check()
        except PlacementError as e:
            raise RestoreFailed(str(e)) from e
        if runs and all(n == nl for _, (_, _, n, _, _, _) in runs):
            # Every run holds all the stage's layers (the holder's chunks): one gather, then
            # one scatter into the pages.
            parts = [pool_order(data[a:a + n, :, :, toff:toff + p1 - p0]) for data, (a, _, n, toff, p0, p1) in runs]
            src = parts[0] if len(parts) == 1 else torch.cat(parts, dim=2)
            idx = self.pool.slot_index(request, start, placer.have).to(self.device)
            self.pool.kv[:, :, idx] = src.to(device=self.device, dtype=self.dtype)
        else:
            idx = self.pool.slot_index(request, 0, need).to(self.device) if runs else None
            for data, (a, s, n, toff, p0, p1) in runs:
                part = pool_order(data[a:a + n, :, :, toff:toff + p1 - p0])
                self.pool.kv[s:s + n, :, idx[p0:p1]] = part.to(device=self.device, dtype=self.dtype)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        chunks = runs = parts = src = None  # no view of the mapping outlives it
        return placer.have, t_h2d, time.perf_counter() - t_scatter, placer.top

    def _h2d(self, host, pinned: bool = False):
        if getattr(self, "_staging", None) is None:
            self._staging = []
        return host_to_device(host, self.device, self._staging, pinned)

    # --- compute ----------------------------------------------------------------------------

    @torch.no_grad()
    def forward(self, kind: str, entries: list[dict], x, prefetch: list[tuple[str, int]] | None = None):
        """Run the local blocks over the batch. x: hidden states [rows, hidden] or, at the first
        stage, token ids (one per row). Returns the hidden states after the last local block.
        Swapping, the entries' caches are swapped in first (or waited for, if prefetched), and
        prefetch's (request, positions) rows — the next step's — start swapping in beside this
        step's compute; without swapping prefetch is ignored.

        The prefetch is queued once this step's compute is: its host work (choosing victims,
        indexing pages, issuing copies) then runs while the device computes, and its copies wait,
        on the swap stream, only for the work queued before this step's (an event recorded once
        the step's own rows are resident), not for its inputs or compute. That is safe because
        the step's rows and the prefetched rows are protected from eviction: the copies touch
        only pages this step's compute does not.
        Until 2026-12-07 the prefetch was queued before the step's own inputs, and the step's
        slot copy (synchronous, from pageable memory) waited behind its whole contexts on the
        host-to-device path: on one H100 the swapping step at microbatch 16 took 17.5 ms that
        way, 14.8 with the prefetch after the inputs and 13.6-14.1 as now (BENCHMARKS.md)."""
        # The next step's prefetch, queued once this step's compute is: (its rows, the event its
        # copies wait for).
        deferred = None
        if self.swap is not None:
            rows = [(e["request"], e["positions"][1]) for e in entries]
            if len(entries) > 1 and self.swap.blocks_for(rows) > self.pool.num_blocks:
                return self._forward_in_parts(kind, entries, x, prefetch)
            self.swap.ensure(rows)
            if prefetch:
                # What the prefetch's copies wait for: the work queued before this step's.
                before = torch.cuda.Event() if self.device.type == "cuda" else None
                if before is not None:
                    before.record()
                deferred = (prefetch, before)
        pool, dev = self.pool, self.device
        segs, pos, slots = [], [], []
        row = 0
        for e in entries:
            p0, p1 = e["positions"]
            r = e["request"]
            if pool.lengths.get(r, 0) < p0:
                raise RestoreFailed(f"{r}: positions {p0}:{p1} come after the {pool.lengths.get(r, 0)} cached")
            segs.append((r, p0, p1, row))
            pos.extend(range(p0, p1))
            slots.extend(pool.slots(r, p0, p1))
            row += p1 - p0
        rows = len(x) if isinstance(x, (list, tuple)) else x.shape[0]
        if row != rows:
            raise ValueError(f"{rows} rows for {row} positions")
        decode = all(p1 - p0 == 1 for _, p0, p1, _ in segs)
        slots_t = torch.tensor(slots, device=dev)
        if decode and self.graphs is not None:
            x = self.graphs.run(x, [(r, p1) for r, _, p1, _ in segs], slots)
            if deferred is not None:
                self.swap.prefetch(deferred[0], after=deferred[1])
            return self._decoded(entries, segs, slots_t, x)
        if self.is_first:
            x = self.model.embed_tokens(x)
        else:
            x = x.to(device=self.device, dtype=self.dtype)
        pos_t = torch.tensor(pos, device=dev)
        cos, sin = rope_tables(self.c, pos_t, dev)
        c = self.c
        groups, scale = c.heads // c.kv_heads, c.head_dim ** -0.5
        if decode:
            seqs = [(r, p1) for r, _, p1, _ in segs]
            idx, valid = pool.attention_index(seqs, len(seqs), max(p1 for _, p1 in seqs))
            idx, valid = idx.to(dev), valid.to(dev)
        else:
            seg_idx = []
            for r, p0, p1, r0 in segs:
                kpos = torch.arange(p1, device=dev)
                qpos = torch.arange(p0, p1, device=dev)
                seg_idx.append((r0, p1 - p0, pool.slot_index(r, 0, p1).to(dev),
                                kpos[None, :] <= qpos[:, None]))
        writer = self.writer if self.writer is not None and self.writer.active else None

        def attend(i, q, k, v):
            kf, vf = pool.layer(i)
            kf[slots_t] = k
            vf[slots_t] = v
            if decode:
                return decode_attention(q, kf, vf, idx, valid, c)
            outs = []
            for r0, n, sidx, mask in seg_idx:
                if _sdpa is not None and self.device.type == "cuda":
                    outs.append(_prefill_attention(q[r0:r0 + n], kf[sidx], vf[sidx], mask, groups, scale))
                    continue
                qg = q[r0:r0 + n].view(n, c.kv_heads, groups, c.head_dim).permute(1, 2, 0, 3)
                kk = kf[sidx].permute(1, 2, 0)[:, None]  # [kvh, 1, hd, S]
                vv = vf[sidx].permute(1, 0, 2)[:, None]  # [kvh, 1, S, hd]
                s = torch.matmul(qg, kk).float() * scale  # [kvh, G, n, S]
                s.masked_fill_(~mask, float("-inf"))
                o = torch.matmul(torch.softmax(s, -1).to(vv.dtype), vv)  # [kvh, G, n, hd]
                outs.append(o.permute(2, 0, 1, 3).reshape(n, c.heads * c.head_dim))
            return torch.cat(outs) if len(outs) > 1 else outs[0]

        if writer is not None and not decode:
            for e, (r, p0, _, _) in zip(entries, segs):
                if p0 == 0 and e.get("step", 0) > 0:
                    writer.drop(r)  # a re-prefill replaces whatever replica the holder keeps
        nb = len(self.model.blocks)
        for i in range(nb):
            x = self.model.block_forward(i, x, cos, sin, attend)
            if writer is not None and not decode:
                # The prompt's KV streams out layer by layer, as soon as the layer has it; the
                # put of the last local layer completes the replica at the entry's step.
                kf, vf = pool.layer(i)
                for e, (r, p0, p1, r0) in zip(entries, segs):
                    writer.put_prompt(r, self.first + i, p0, p1, kf[slots_t[r0:r0 + p1 - p0]],
                                      vf[slots_t[r0:r0 + p1 - p0]], last=i == nb - 1,
                                      layers=(self.first, self.end), step=e.get("step", 0))
        if deferred is not None:
            self.swap.prefetch(deferred[0], after=deferred[1])
        if decode:
            return self._decoded(entries, segs, slots_t, x)
        for r, _, p1, _ in segs:
            pool.lengths[r] = p1
        return x

    def _forward_in_parts(self, kind: str, entries: list[dict], x, prefetch):
        """Swapping, a step whose sequences do not fit the GPU pool together (a stage whose pool
        is smaller than the first stage's, which chose the step) runs as consecutive forwards of
        parts that do, each swapping its sequences in: every row attends to its own request's
        cache only, so the parts' outputs are the step's."""
        parts, cur, blocks = [], [], 0
        for e in entries:
            n = self.pool.blocks_needed(e["positions"][1])
            if cur and blocks + n > self.pool.num_blocks:
                parts.append(cur)
                cur, blocks = [], 0
            cur.append(e)
            blocks += n
        parts.append(cur)
        outs, row = [], 0
        for i, part in enumerate(parts):
            n = sum(e["positions"][1] - e["positions"][0] for e in part)
            xs = x[row:row + n]
            row += n
            outs.append(self.forward(kind, part, xs, prefetch if i == len(parts) - 1 else None))
        return torch.cat(outs)

    def _decoded(self, entries, segs, slots_t, x):
        """After a decode step: the cache lengths move on and, replicating, the step's new K/V of
        every sequence and local layer goes out in one gather, one copy, one frame."""
        for r, _, p1, _ in segs:
            self.pool.lengths[r] = p1
        writer = self.writer if self.writer is not None and self.writer.active else None
        if writer is not None:
            kv = self.pool.kv[:, :, slots_t].permute(2, 0, 1, 3, 4).contiguous()  # [n, L, 2, kvh, hd]
            writer.put_step([{"request": r, "token": p0, "step": e["step"]} for e, (r, p0, _, _) in zip(entries, segs)],
                            (self.first, self.end), kv)
        return x

    @torch.no_grad()
    def sample(self, entries: list[dict], x) -> list[int]:
        """The last stage: the token of every entry's step, from the hidden state of its last row."""
        last, row = [], 0
        for e in entries:
            p0, p1 = e["positions"]
            row += p1 - p0
            last.append(row - 1)
        # A decode step has one row per entry: every row is a last row, and x is taken as it is.
        rows = x if last == list(range(x.shape[0])) else x[torch.tensor(last, device=x.device)]
        logits = self.model.logits(rows)
        ps = [self.params.get(e["request"], {}) for e in entries]
        return choose_rows(logits, [float(p.get("temperature", 0.0)) for p in ps], [int(p.get("seed", 0)) for p in ps],
                           [int(e["step"]) for e in entries])


STAGE_PIECE = 64 << 20

# Fused attention (flash attention on a GPU) where torch has it (2.0 and later): a prefill
# attends without materialising its [heads, n, S] scores, as production engines do, so the
# cost of re-prefilling (the baseline a restore is measured against) is a fair one.
_sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)


def _prefill_attention(q, k, v, mask, groups: int, scale: float):
    """Attention of n query rows q [n, heads, hd] over S cached positions k, v [S, kv_heads, hd];
    mask [n, S] is True where a row may attend. A prefill from position 0 is causal as is; one
    after a cached prefix passes its mask (the rows sit at the end of the positions)."""
    n, heads, hd = q.shape
    kk = k.repeat_interleave(groups, dim=1).transpose(0, 1)[None]  # [1, heads, S, hd]
    vv = v.repeat_interleave(groups, dim=1).transpose(0, 1)[None]
    qq = q.transpose(0, 1)[None]  # [1, heads, n, hd]
    causal = n == k.shape[0]
    o = _sdpa(qq, kk, vv, attn_mask=None if causal else mask, is_causal=causal, scale=scale)
    return o[0].transpose(0, 1).reshape(n, heads * hd)


def host_to_device(host, device, staging: list | None = None, pinned: bool = False):
    """A uint8 CPU tensor (a mapped file) copied to a CUDA device. Memory already page-locked
    (`pinned`, a LentReader's) goes in one DMA. Otherwise SCHOONER_KV_H2D=register (default)
    page-locks the mapping for the copy (cudaHostRegister); =staging, or when registering fails,
    it goes through two pinned buffers (kept in `staging`) in 64 MiB pieces."""
    n = host.numel()
    dev = torch.empty(n, dtype=torch.uint8, device=device)
    stream = torch.cuda.current_stream(device)
    if pinned:
        dev.copy_(host, non_blocking=True)
        stream.synchronize()
        return dev
    if os.environ.get("SCHOONER_KV_H2D", "register") == "register":
        try:
            cudart = torch.cuda.cudart()
            ptr = host.data_ptr()
            ok = int(cudart.cudaHostRegister(ptr, n, 0)) == 0
        except Exception:  # noqa: BLE001 — no binding: stage instead
            ok = False
        if ok:
            try:
                dev.copy_(host, non_blocking=True)
                stream.synchronize()
            finally:
                cudart.cudaHostUnregister(ptr)
            return dev
    bufs = staging if staging is not None else []
    if not bufs:
        bufs.extend(torch.empty(STAGE_PIECE, dtype=torch.uint8, pin_memory=True) for _ in range(2))
    events = [None, None]
    for i, off in enumerate(range(0, n, STAGE_PIECE)):
        m = min(STAGE_PIECE, n - off)
        b = bufs[i % 2]
        if events[i % 2] is not None:
            events[i % 2].synchronize()
        b[:m].copy_(host[off:off + m])
        dev[off:off + m].copy_(b[:m], non_blocking=True)
        events[i % 2] = torch.cuda.Event()
        events[i % 2].record(stream)
    stream.synchronize()
    return dev


def generate(engine: StageEngine, request: str, prompt: list[int], max_tokens: int, temperature: float = 0.0,
             seed: int = 0, stop=()) -> list[int]:
    """One request alone through a whole-model engine (a reference for tests and benchmarks)."""
    params = {"temperature": temperature, "seed": seed, "max_tokens": max_tokens, "stop": list(stop),
              "reserve": len(prompt) + max_tokens}
    engine.begin(request, params["reserve"], params)
    e = [{"request": request, "step": 0, "positions": [0, len(prompt)]}]
    toks = engine.sample(e, engine.forward("prefill", e, prompt))
    p = len(prompt)
    for k in range(1, max_tokens):
        if toks[-1] in params["stop"]:
            break
        e = [{"request": request, "step": k, "positions": [p + k - 1, p + k]}]
        toks += engine.sample(e, engine.forward("decode", e, [toks[-1]]))
    engine.release(request)
    return toks
