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

On a CPU the same code scatters each chunk straight from the lent memory (no copy, no streams).
"""

from __future__ import annotations

import os
import time

import torch

# Device slots a restore cycles through and the bytes of each (SCHOONER_KV_RESTORE_SLOT_MIB):
# 4 × 64 MiB holds several of the holder's chunks (at most 64 per replica; an 8k-token replica
# of 16 layers of an 8B model comes in 16 MiB chunks).
RESTORE_SLOTS = 4
RESTORE_SLOT_BYTES = int(os.environ.get("SCHOONER_KV_RESTORE_SLOT_MIB", "64")) << 20


class PlacementError(Exception):
    """A replica that does not fit the stage (its layers do not cover the stage's)."""


class ChunkPlacer:
    """Which part of each chunk a stage takes. A chunk holds a run of tokens of some layers: all
    of the stage's (the holder's chunks) or one (the prompt's pieces in a holder's arena); each
    layer's chunks come in token order. Each of the stage's layers [first, end) fills positions
    [0, need) from 0 on; a chunk's part for a layer is the positions it adds there, and nothing
    after a hole in that layer. `have` is how far every layer reaches."""

    def __init__(self, first: int, end: int, need: int, request: str = ""):
        self.first, self.end, self.need, self.request = first, end, need, request
        self.ends = [0] * (end - first)
        self.stopped = [False] * (end - first)  # a hole was met in the layer
        self.span = None  # the layers the chunks held, (lowest, past the highest)

    @property
    def have(self) -> int:
        return min(self.ends, default=0)

    def take(self, layers, tokens) -> list[tuple]:
        """The runs to place: (a, s, n, toff, p0, p1) puts the chunk's layers [a, a+n) at the
        stage's layers [s, s+n), positions [p0, p1) (the chunk's tokens from toff on)."""
        (l0, l1), (t0, t1) = layers, tokens
        self.span = (l0, l1) if self.span is None else (min(self.span[0], l0), max(self.span[1], l1))
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


def step_runs(chunks, slot_bytes=None) -> list[list]:
    """The chunks in order, as groups to place together: a run of one-token chunks of the same
    layers, shape and dtype whose tokens follow each other (a request's decode steps) is one
    group, at most as many as fit slot_bytes (None: no bound); every other chunk is a group of
    its own."""
    groups: list[list] = []
    for ch in chunks:
        layers, (t0, _), host = ch
        last = groups[-1] if groups else None
        if _is_step(ch) and last is not None and _is_step(last[-1]):
            pl, (_, pt1), ph = last[-1]
            step = host.numel() * host.element_size()
            if (pl == layers and pt1 == t0 and pt1 - last[0][1][0] == len(last) and ph.shape == host.shape
                    and ph.dtype == host.dtype
                    and (slot_bytes is None or (len(last) + 1) * step <= slot_bytes)):
                last.append(ch)
                continue
        groups.append([ch])
    return groups


def _is_step(chunk) -> bool:
    """Whether a chunk is one decode step: one token, contiguous (a step run's member)."""
    _, (t0, t1), host = chunk
    return t1 - t0 == 1 and host.is_contiguous()


def _steps_only(group) -> bool:
    """Whether a group of step_runs is decode steps, which the next chunks may continue."""
    return all(_is_step(ch) for ch in group)


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
    ChunkPlacer); `finish()` returns
    the positions placed once the lent memory may be written again. The pages are written on
    the scatter stream; the current stream is made to wait for them, so the next forward sees
    them without the host waiting."""

    def __init__(self, pool, request: str, first: int, end: int, need: int, slots: RestoreSlots):
        self.pool, self.slots = pool, slots
        self.placer = ChunkPlacer(first, end, need, request)
        # Where a restore's time goes on the host: the pieces placed (runs of layers and
        # positions), the slot copies issued, and the time spent issuing them, all inside the
        # holder's fetch. Per piece, that is the cost of a copy and a scatter's launches.
        self.pieces, self.slot_copies, self.place_s = 0, 0, 0.0
        self._held: list = []  # a run of decode steps landed and not yet placed
        # Every slot of positions [0, need), on the device, made on the stream that reads it
        # and from page-locked memory, so the host does not wait for the previous request's
        # scatters (a blocking copy on that stream would).
        idx = pool.slot_index(request, 0, need) if need > 0 else torch.empty(0, dtype=torch.long)
        if slots.cuda:
            with torch.cuda.stream(slots.scatters):
                self.idx = idx.pin_memory().to(slots.device, non_blocking=True)
        else:
            self.idx = idx

    def landed(self, chunks) -> None:
        """Places what landed. The holder says each decode step's chunk landed on its own, so a
        run of steps that may go on is held back (its chunks stay valid in the lent memory until
        the next fetch) and placed with the steps after it, or by finish(): one piece a run, not
        one a step (on an H100 a request of 32 steps was placed as 33 pieces before)."""
        t = time.perf_counter()
        groups = step_runs(self._held + list(chunks), self.slots.slot_bytes if self.slots.cuda else None)
        self._held = groups.pop() if groups and _steps_only(groups[-1]) else []
        for group in groups:
            self._place(group)
        self.place_s += time.perf_counter() - t

    def _place(self, group) -> None:
        if len(group) > 1:
            self._steps(group)
            return
        layers, tokens, host = group[0]
        for a, s, n, toff, p0, p1 in self.placer.take(layers, tokens):
            self.pieces += 1
            if self.slots.cuda:
                self._through_slots(host, a, s, n, toff, p0, p1)
            else:
                self._put(host[a:a + n, :, :, toff:toff + p1 - p0], s, n, p0, p1)

    def _put(self, part, s: int, n: int, p0: int, p1: int) -> None:
        """Part [n, 2, kv_heads, p1-p0, head_dim] into the stage's layers [s, s+n), positions
        [p0, p1) of the request's pages (on the scatter stream when called inside it)."""
        self.pool.kv[s:s + n, :, self.idx[p0:p1]] = pool_order(part).to(self.pool.kv.dtype)

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

    def _steps(self, group) -> None:
        """Consecutive one-token chunks of the same layers (decode steps, see step_runs) placed as
        one piece: each chunk's bytes go to its place in one slot (one copy each), and one
        scatter a run of layers writes all their positions, where a piece each cost a copy,
        two event waits and a scatter, about 80 µs of host time on an H100 (BENCHMARKS.md,
        serving, 2026-12-06). On a CPU the steps are joined on the host, then placed once."""
        layers, (t0, _), first = group[0]
        runs = self.placer.take(layers, (t0, t0 + len(group)))
        if not runs:
            return
        self.pieces += len(runs)
        if not self.slots.cuda:
            joined = torch.cat([host for _, _, host in group], dim=3)
            for a, s, n, toff, p0, p1 in runs:
                self._put(joined[a:a + n, :, :, toff:toff + p1 - p0], s, n, p0, p1)
            return
        step = first.numel() * first.element_size()

        def fill(buf):
            for i, (_, _, host) in enumerate(group):
                buf[i * step:(i + 1) * step].copy_(host.reshape(-1).view(torch.uint8), non_blocking=True)
            # The slot holds [G, L, 2, kv_heads, head_dim], step after step; as the chunks' layout:
            L, two, kvh, _, hd = first.shape
            return buf[:len(group) * step].view(first.dtype).view(len(group), L, two, kvh, hd).permute(1, 2, 3, 0, 4)

        k, steps = self._into_slot(fill)

        def scatter():
            for a, s, n, toff, p0, p1 in runs:
                self._put(steps[a:a + n, :, :, toff:toff + p1 - p0], s, n, p0, p1)

        self._out_of_slot(k, scatter)

    def _through_slots(self, host, a: int, s: int, n: int, toff: int, p0: int, p1: int) -> None:
        """The chunk's layers [a, a+n) to the stage's [s, s+n), as many layers a slot as fit."""
        sl = self.slots
        per_layer = host[0].numel() * host.element_size()
        sl.fit(per_layer)
        group = max(1, sl.slot_bytes // per_layer)
        for g0 in range(0, n, group):
            g1 = min(n, g0 + group)
            src = host[a + g0:a + g1]
            nbytes = src.numel() * src.element_size()
            k, dst = self._into_slot(lambda buf: buf[:nbytes].view(src.dtype).view(src.shape).copy_(src, non_blocking=True))
            self._out_of_slot(k, lambda: self._put(dst[:, :, :, toff:toff + p1 - p0], s + g0, g1 - g0, p0, p1))

    def finish(self) -> int:
        """Wait for the copies out of the lent memory (the holder may write it again after this),
        not for the scatters: the current stream waits for those on the device. PlacementError
        when the replica did not fit the stage."""
        if self._held:
            t = time.perf_counter()
            self._place(self._held)
            self._held = []
            self.place_s += time.perf_counter() - t
        if self.slots.cuda:
            self.slots.copies.synchronize()
            torch.cuda.current_stream(self.slots.device).wait_stream(self.slots.scatters)
        self.placer.check()
        return self.placer.have

    def abandon(self) -> None:
        """After a failed fetch: no copy may still read the lent memory, no scatter the slots."""
        self._held = []
        if self.slots.cuda:
            self.slots.copies.synchronize()
            self.slots.scatters.synchronize()
