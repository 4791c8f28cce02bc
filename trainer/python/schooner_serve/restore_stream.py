"""Placing a replica's chunks into a request's KV pages, and doing it while the holder is still
writing them.

A restore through lent memory (replicate.LentReader) used to wait for the whole replica on the
GPU before one gather and one scatter into the pages: holder copy, then the copy to the GPU's
tail, then the scatter, one after the other. `StreamedScatter` moves each chunk on as soon as the
holder says it landed: from the page-locked lent memory into one of a few fixed device slots
(a copy stream), and from the slot into the request's pages (a scatter stream), so the GPU works
beside the holder's copy and a restore costs the copy plus one chunk's trip. The slots are
allocated once, when the stage lends its memory, not at failure time, and are small (a few
chunks), where the whole-replica buffer was the size of the lent memory (up to 8 GiB of device
memory held for a restore that may never come).

The host's cost is per piece placed (a copy, two event waits and a scatter, 80-120 µs on an
H100), and the holder's arena hands over the prompt one piece per layer, so consecutive layers
over the same tokens are placed together, a slot's worth at a time (`layer_groups`).

On a CPU the same code scatters straight from the lent memory (no streams; a group of layers is
joined on the host first).
"""

from __future__ import annotations

import os
import time

import torch

# Device slots a restore cycles through and the bytes of each (SCHOONER_KV_RESTORE_SLOT_MIB):
# 4 × 64 MiB holds several of the holder's chunks (at most 64 per replica). A prompt layer of
# an 8B model (8 KV heads of 128, bf16) is 8 MiB at 2k tokens and 32 MiB at 8k, so a slot
# places 8 or 2 of the arena's one-layer pieces at once.
RESTORE_SLOTS = 4
RESTORE_SLOT_BYTES = int(os.environ.get("SCHOONER_KV_RESTORE_SLOT_MIB", "64")) << 20


class PlacementError(Exception):
    """A replica that does not fit the stage (its layers do not cover the stage's)."""


class ChunkPlacer:
    """Which part of each chunk a stage takes. A chunk holds a run of tokens of some layers: all
    of the stage's (the holder's chunks), one (the prompt's pieces in a holder's arena) or a run
    of those placed together (layer_groups); each layer's chunks come in token order. Each of
    the stage's layers [first, end) fills positions [0, need) from 0 on; a chunk's part for a
    layer is the positions it adds there, and nothing after a hole in that layer. `have` is how
    far every layer reaches."""

    def __init__(self, first: int, end: int, need: int, request: str = "", start: int = 0):
        self.first, self.end, self.need, self.request = first, end, need, request
        # Positions [0, start) are in place already (a preloaded replica): only what follows
        # is taken, whether the holder sent the steps after it alone (a get from a step) or,
        # predating that, the whole replica again.
        self.ends = [start] * (end - first)
        self.stopped = [False] * (end - first)  # a hole was met in the layer
        self.span = None  # the layers the chunks held, (lowest, past the highest)
        self.top = 0  # the last position any chunk reached: the replica's end

    @property
    def have(self) -> int:
        return min(self.ends, default=0)

    def take(self, layers, tokens) -> list[tuple]:
        """The runs to place: (a, s, n, toff, p0, p1) puts the chunk's layers [a, a+n) at the
        stage's layers [s, s+n), positions [p0, p1) (the chunk's tokens from toff on)."""
        (l0, l1), (t0, t1) = layers, tokens
        self.span = (l0, l1) if self.span is None else (min(self.span[0], l0), max(self.span[1], l1))
        self.top = max(self.top, t1)
        runs: list[list[int]] = []
        for layer in range(max(l0, self.first), min(l1, self.end)):
            s = layer - self.first
            if self.stopped[s] or t0 > self.ends[s]:
                self.stopped[s] = True
                continue
            p0, p1 = self.ends[s], min(t1, self.need)
            if p1 <= p0:
                continue
            self.ends[s] = p1
            last = runs[-1] if runs else None
            if last is not None and last[1] + last[2] == s and last[4:] == [p0, p1]:
                last[2] += 1
            else:
                runs.append([layer - l0, s, 1, p0 - t0, p0, p1])
        return [tuple(r) for r in runs]

    def check(self) -> None:
        """PlacementError when the chunks held layers but not all of the stage's."""
        if self.span is not None and (self.span[0] > self.first or self.span[1] < self.end):
            raise PlacementError(f"{self.request}: replica holds layers {self.span[0]}:{self.span[1]}, "
                                 f"this stage needs {self.first}:{self.end}")


def layer_groups(chunks, slot_bytes=None) -> list[list]:
    """The chunks in order, as groups each placed as one chunk: consecutive chunks of adjacent
    layers (the next starts where the last ends) over the same tokens, with the same per-layer
    shape and dtype, contiguous, and together at most slot_bytes (None: no bound). A streamed
    get from the holder's arena points at the prompt one piece per layer (kvcache/shm.go
    getArena), so these are the prompt's layers: 32 pieces of the 33 a request of the 8B model
    (the decode steps come in chunks of many tokens; BENCHMARKS.md, serving, call 30,
    2026-12-06). Every other chunk is a group of its own."""
    groups: list[list] = []
    for ch in chunks:
        last = groups[-1] if groups else None
        if last is not None and _joins(last, ch, slot_bytes):
            last.append(ch)
        else:
            groups.append([ch])
    return groups


def _joins(group, chunk, slot_bytes) -> bool:
    """Whether chunk continues group's layers over the same tokens (see layer_groups)."""
    (_, pl1), ptokens, prev = group[-1]
    (l0, _), tokens, host = chunk
    if not (l0 == pl1 and tokens == ptokens and host.shape[1:] == prev.shape[1:] and host.dtype == prev.dtype
            and host.is_contiguous() and prev.is_contiguous()):
        return False
    return slot_bytes is None or sum(_nbytes(h) for _, _, h in group) + _nbytes(host) <= slot_bytes


def _nbytes(t) -> int:
    return t.numel() * t.element_size()


def pool_order(part):
    """A chunk's [L, 2, kv_heads, T, head_dim] as the pool's [L, 2, T, kv_heads, head_dim]."""
    return part.permute(0, 1, 3, 2, 4)


class RestoreSlots:
    """The device slots of streamed restores and the two streams that fill and empty them,
    made once per stage. Each slot has an event for "its bytes are on the device" (copy stream)
    and one for "its scatter has read it" (scatter stream)."""

    def __init__(self, device, slots: int = RESTORE_SLOTS, slot_bytes: int = RESTORE_SLOT_BYTES):
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        self.slot_bytes, self.next = 0, 0
        self.bufs, self.landed, self.read = [], [], []
        if self.cuda:
            self.copies = torch.cuda.Stream(device=self.device)
            self.scatters = torch.cuda.Stream(device=self.device)
            self._allocate(slots, slot_bytes)

    def _allocate(self, slots: int, slot_bytes: int) -> None:
        # Slots still being read finish first: the old buffers must outlive their scatters.
        if self.bufs:
            self.scatters.synchronize()
        self.slot_bytes = slot_bytes
        self.bufs = [torch.empty(slot_bytes, dtype=torch.uint8, device=self.device) for _ in range(slots)]
        self.landed = [torch.cuda.Event() for _ in range(slots)]
        self.read = [None] * slots  # no scatter has used the slot yet
        self.next = 0

    def fit(self, nbytes: int) -> None:
        """Grow the slots (at failure time, said on stdout) when one layer of a chunk passes them."""
        if nbytes > self.slot_bytes:
            grown = 1 << (nbytes - 1).bit_length()
            print(f"schooner_serve: restore slots grown from {self.slot_bytes} to {grown} bytes "
                  f"(a chunk's layer holds {nbytes})", flush=True)
            self._allocate(len(self.bufs), grown)


class StreamedScatter:
    """One request's streamed restore: `landed(chunks)` takes [(layers, tokens, host tensor
    [L, 2, kv_heads, T, head_dim])] as the holder lands them (each layer's in token order, see
    ChunkPlacer); `finish()` returns the positions placed once the lent memory may be written
    again. The pages are written on the scatter stream; the current stream is made to wait for
    them, so the next forward sees them without the host waiting."""

    def __init__(self, pool, request: str, first: int, end: int, need: int, slots: RestoreSlots, start: int = 0):
        self.pool, self.slots, self.start = pool, slots, start
        self.placer = ChunkPlacer(first, end, need, request, start)
        # Where a restore's time goes on the host: the pieces placed (scatters issued, one a
        # group of chunks in the usual case), the slot fills, and the time spent issuing them,
        # all inside the holder's fetch. Each piece costs a scatter's launches and event waits.
        self.pieces, self.slot_copies, self.place_s = 0, 0, 0.0
        # Every slot of positions [start, need), on the device, made on the stream that reads it
        # and from page-locked memory, so the host does not wait for the previous request's
        # scatters (a blocking copy on that stream would).
        idx = pool.slot_index(request, start, need) if need > start else torch.empty(0, dtype=torch.long)
        if slots.cuda:
            with torch.cuda.stream(slots.scatters):
                self.idx = idx.pin_memory().to(slots.device, non_blocking=True)
        else:
            self.idx = idx

    def landed(self, chunks) -> None:
        """Places what landed, the prompt's one-layer pieces a slot's worth at a time (see
        layer_groups): on an H100 each piece cost 80-120 µs of host time for its copy, two event
        waits and its scatter, 33 pieces a request of the 8B model, 32 of them the prompt's
        layers (BENCHMARKS.md, serving, call 30, 2026-12-06). The arena's pieces all come in
        one call (replicate.LentReader.fetch), so groups need not outlast it."""
        t = time.perf_counter()
        for group in layer_groups(chunks, self.slots.slot_bytes if self.slots.cuda else None):
            self._place(group)
        self.place_s += time.perf_counter() - t

    def _place(self, group) -> None:
        """A group placed as one chunk of layers (its first's l0, its last's l1)."""
        (l0, _), tokens, host = group[0]
        runs = self.placer.take((l0, group[-1][0][1]), tokens)
        if not runs:
            return
        if not self.slots.cuda:
            if len(group) > 1:
                host = torch.cat([h for _, _, h in group])
            for a, s, n, toff, p0, p1 in runs:
                self._put(host[a:a + n, :, :, toff:toff + p1 - p0], s, n, p0, p1)
        elif len(group) == 1:
            for run in runs:
                self._through_slots(host, *run)
        else:
            self._group_through_slot(group, runs)

    def _put(self, part, s: int, n: int, p0: int, p1: int) -> None:
        """Part [n, 2, kv_heads, p1-p0, head_dim] into the stage's layers [s, s+n), positions
        [p0, p1) of the request's pages (on the scatter stream when called inside it)."""
        self.pieces += 1
        self.pool.kv[s:s + n, :, self.idx[p0 - self.start:p1 - self.start]] = pool_order(part).to(self.pool.kv.dtype)

    def _into_slot(self, fill):
        """The next device slot, once its last scatter has read it, filled on the copy stream by
        fill(slot bytes), whose result is returned with the slot's number."""
        sl = self.slots
        self.slot_copies += 1
        k = sl.next
        sl.next = (k + 1) % len(sl.bufs)
        with torch.cuda.stream(sl.copies):
            if sl.read[k] is not None:
                sl.copies.wait_event(sl.read[k])  # the slot's last scatter has read it
            got = fill(sl.bufs[k])
            sl.landed[k].record(sl.copies)
        return k, got

    def _out_of_slot(self, k: int, scatter) -> None:
        """scatter() on the scatter stream once slot k has landed; the slot is free again once
        it has run."""
        sl = self.slots
        with torch.cuda.stream(sl.scatters):
            sl.scatters.wait_event(sl.landed[k])
            scatter()
            ev = torch.cuda.Event()
            ev.record(sl.scatters)
            sl.read[k] = ev

    def _group_through_slot(self, group, runs) -> None:
        """A group of layer_groups (it fits a slot): each chunk's bytes copied after the one
        before it in one slot, which then holds the group's layers as one chunk, and its runs
        scattered from there on one slot's landing."""
        first = group[0][2]
        layers = sum(h.shape[0] for _, _, h in group)

        def fill(buf):
            off = 0
            for _, _, host in group:
                n = _nbytes(host)
                buf[off:off + n].view(host.dtype).view(host.shape).copy_(host, non_blocking=True)
                off += n
            return buf[:off].view(first.dtype).view(layers, *first.shape[1:])

        k, joined = self._into_slot(fill)

        def scatter():
            for a, s, n, toff, p0, p1 in runs:
                self._put(joined[a:a + n, :, :, toff:toff + p1 - p0], s, n, p0, p1)

        self._out_of_slot(k, scatter)

    def _through_slots(self, host, a: int, s: int, n: int, toff: int, p0: int, p1: int) -> None:
        """The chunk's layers [a, a+n) to the stage's [s, s+n), as many layers a slot as fit."""
        sl = self.slots
        per_layer = _nbytes(host[0])
        sl.fit(per_layer)
        group = max(1, sl.slot_bytes // per_layer)
        for g0 in range(0, n, group):
            g1 = min(n, g0 + group)
            src = host[a + g0:a + g1]
            nbytes = _nbytes(src)
            k, dst = self._into_slot(lambda buf: buf[:nbytes].view(src.dtype).view(src.shape).copy_(src, non_blocking=True))
            self._out_of_slot(k, lambda: self._put(dst[:, :, :, toff:toff + p1 - p0], s + g0, g1 - g0, p0, p1))

    def finish(self) -> int:
        """Wait for the copies out of the lent memory (the holder may write it again after this),
        not for the scatters: the current stream waits for those on the device. PlacementError
        when the replica did not fit the stage."""
        if self.slots.cuda:
            self.slots.copies.synchronize()
            torch.cuda.current_stream(self.slots.device).wait_stream(self.slots.scatters)
        self.placer.check()
        return self.placer.have

    def abandon(self) -> None:
        """After a failed fetch: no copy may still read the lent memory, no scatter the slots."""
        if self.slots.cuda:
            self.slots.copies.synchronize()
            self.slots.scatters.synchronize()
