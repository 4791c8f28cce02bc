"""Checkpoints that do not hold the training loop for the copy (PCcheck's overlap).

A blocking save (torch_state.save) holds the loop while every tensor crosses from the GPU into
shared memory and the agent copies it out: 0.87 s per 5.7 GB on an H200. The weights and the
optimizer state only change at the optimizer step, so the copy may run while the next
iteration's forward and backward passes run, as long as it ends before that step:

    saver = OverlappedSaver(client)          # after hello
    saver.prepare(state)                     # buffers allocated and page-locked now
    for it in ...:
        loss = forward_backward(...)
        saver.before_update()                # the optimizer step waits for the copy (on the GPU)
        opt.step()
        if step % every == 0:
            saver.start(state, step)         # queues the copy and returns
    saver.flush()                            # every save in the agent's hands

start() records an event on the training stream and queues, on a side stream, the copy of
each tensor (in pieces of chunk_bytes) into a page-locked shared-memory buffer; a background
thread waits for the copy, then hands the buffer to the agent over its own connection
(Client.sibling) and frees it. before_update() makes the training stream wait for the copy's
last event, so the host never blocks there and only copy time that forward and backward did
not cover delays the step.

The host link is what forward and backward may not cover: the whole training state (weights
and Adam's moments, 17 GB for a 1.4 B model) takes longer to cross it than the next
iteration's forward and backward (on an H100 the step after a save waited about 0.2 s for the
rest). With a device snapshot (device_snapshot "on", or "auto" where the GPU has the room),
the side stream first copies the state into one spare GPU buffer, a copy at the GPU memory's
speed when it moves 8-byte elements (a byte-wise one was far slower: _stage), and the step
waits only for that; the copy to the host then runs from the snapshot while the optimizer
changes the originals, across as many iterations as it takes. While those copies run, the
training loop must not read a tensor back into ordinary (pageable) memory, as loss.item() or
float(loss) do: the driver holds such a read until every device-to-host copy in flight has
finished, this save's 17 GB included, and the GPU idles meanwhile (0.27 s on an H100 when the
reference trainer read each microbatch's loss during the next forward). Read losses after the
optimizer step and before the next start(). "auto" decides at the first save (the allocator has then reserved the
training's peak): a snapshot only if the free memory keeps SNAPSHOT_HEADROOM of the GPU and
1 GiB besides; else, or if allocating it fails, the copies go straight to the host as before.
With `buffers` buffers, that many saves may be in flight; when all
are still with the agent (the disk is slower than the checkpoints come), start() blocks until
one frees and reports that wait as back-pressure. On a machine without CUDA the copy is done
in start() and only the agent's part runs in the background.

A failure in the background (the agent refused a save, the connection broke) is raised by the
next start() or flush(), so no lost checkpoint goes unnoticed.
"""

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from .client import Client, Entry, SaveBuffer, layout
from .torch_state import _entries, _fill, _torch


@dataclass
class OverlapStats:
    """What the saves cost the loop: host time held in start() (layout, queueing and
    back-pressure), the part of it spent waiting for a free buffer, and per save the seconds
    from start() to the agent's reply; bytes is the last save's size."""

    saves: int = 0
    bytes: int = 0
    held_s: List[float] = field(default_factory=list)
    backpressure_s: List[float] = field(default_factory=list)
    handed_s: List[float] = field(default_factory=list)
    pinned: bool = False
    device_snapshot: bool = False  # the copies went through a spare GPU buffer


# The share of the GPU's memory an "auto" device snapshot must leave free (with 1 GiB).
SNAPSHOT_HEADROOM = 0.05


# The pieces a device snapshot crosses to the host in: few, as each copy costs the host a
# fixed time, but not one, so a copy does not hold the side stream for a whole 17 GB.
SNAPSHOT_CHUNK = 1 << 30


def _runs(spans: List[tuple], index: List[Dict[str, Any]]) -> List[tuple]:
    """The byte ranges [lo, hi) of a save's layout covered by spans (offset, length) with only
    padding between them: a range ends where an entry not in spans (one copied on the host, as
    the tree) lies, so a copy of a range writes nothing that another copy wrote."""
    mine = {off for off, _ in spans}
    runs: List[list] = []
    open_run = False
    for meta in sorted(index, key=lambda m: m["offset"]):
        off, n = meta["offset"], meta["length"]
        if n == 0:
            continue
        if off in mine:
            if open_run:
                runs[-1][1] = off + n
            else:
                runs.append([off, off + n])
                open_run = True
        else:
            open_run = False
    return [tuple(r) for r in runs]


def _stage(snap, raws: List[tuple]) -> None:
    """Copies each (raw: a tensor's bytes as flat uint8, offset, length) into snap[offset:
    offset+length] in at most two calls: 8-byte elements wherever the length and both addresses
    allow it, single bytes for the rest (the step counters). A copy kernel that moves one byte
    per element runs far below the memory's speed: call 38 (H100) waited 0.16-0.3 s for a 17 GB
    snapshot copied as bytes."""
    torch = _torch()
    wide: tuple = ([], [])
    narrow: tuple = ([], [])
    for raw, off, n in raws:
        dst = snap[off : off + n]
        if n % 8 == 0 and dst.data_ptr() % 8 == 0 and raw.data_ptr() % 8 == 0:
            wide[0].append(dst.view(torch.int64))
            wide[1].append(raw.view(torch.int64))
        else:
            narrow[0].append(dst)
            narrow[1].append(raw)
    for dsts, srcs in (wide, narrow):
        if not dsts:
            continue
        if hasattr(torch, "_foreach_copy_"):
            torch._foreach_copy_(dsts, srcs)
        else:
            for d, r in zip(dsts, srcs):
                d.copy_(r)


def _to_host(host, off: int, src, piece: int) -> None:
    """Queues the copy of src (flat uint8 on the GPU) into host[off:], piece bytes a copy."""
    n = src.numel()
    for at in range(0, n, piece):
        end = min(n, at + piece)
        host[off + at : off + end].copy_(src[at:end], non_blocking=True)


def snapshot_fits(free: int, total: int, size: int) -> bool:
    """Whether a device snapshot of size bytes may take free memory of a GPU of total bytes."""
    return free - size >= SNAPSHOT_HEADROOM * total + (1 << 30)


class _Pinned:
    """A save buffer with its bytes viewed as a uint8 tensor, page-locked for the GPU when
    CUDA is there (so device-to-host copies are asynchronous DMA)."""

    def __init__(self, buf: SaveBuffer, cuda: bool):
        torch = _torch()
        self.buf = buf
        self.host = torch.frombuffer(buf.mm, dtype=torch.uint8)
        self.registered = False
        if cuda and buf.size > 0:
            err = torch.cuda.cudart().cudaHostRegister(self.host.data_ptr(), buf.size, 0)
            self.registered = int(getattr(err, "value", err)) == 0

    @property
    def size(self) -> int:
        return self.buf.size

    def close(self) -> None:
        torch = _torch()
        if self.registered:
            torch.cuda.cudart().cudaHostUnregister(self.host.data_ptr())
            self.registered = False
        self.host = None  # the mmap's export goes before the mmap is closed
        self.buf.close()


class OverlappedSaver:
    """Saves nested state through the agent beside the next iteration's compute. client must
    have said hello; the saver opens its own connection for the saves."""

    def __init__(
        self,
        client: Client,
        prefix: Optional[str] = "",
        layer_of: Optional[Callable[[str], Optional[int]]] = None,
        buffers: int = 2,
        chunk_bytes: int = 64 << 20,
        device_snapshot: str = "auto",
    ):
        if device_snapshot not in ("auto", "on", "off"):
            raise ValueError(f"device_snapshot must be auto, on or off, not {device_snapshot!r}")
        if buffers < 1:
            raise ValueError(f"buffers must be at least 1, not {buffers}")
        if chunk_bytes < 1 << 20:
            raise ValueError(f"chunk_bytes must be at least 1 MiB, not {chunk_bytes}")
        torch = _torch()
        self._torch = torch
        self._cuda = torch.cuda.is_available()
        self._front = client
        self._conn = client.sibling()
        self.prefix, self.layer_of, self.chunk_bytes = prefix, layer_of, chunk_bytes
        self._count = buffers
        self._free: "queue.Queue[_Pinned]" = queue.Queue()
        self._all: List[_Pinned] = []
        self._jobs: "queue.Queue[Optional[tuple]]" = queue.Queue()
        self._side = torch.cuda.Stream() if self._cuda else None
        self._copied = None  # the last queued copy's event, until before_update consumes it
        self._snapshot_mode = device_snapshot
        self._snap = None  # the device snapshot buffer (uint8), once decided
        self._snap_decided = False
        self._error: Optional[BaseException] = None
        self.accepted = -1  # the newest step the agent has taken
        self.stats = OverlapStats()
        self._thread = threading.Thread(target=self._hand_over, name="schooner-ckpt-overlap", daemon=True)
        self._thread.start()

    # -- the loop's side ----------------------------------------------------------------------

    def prepare(self, state: Any, slack: float = 0.05) -> int:
        """Allocates and page-locks the buffers and reserves the agent's slots for a state of
        this size (plus slack), ahead of the first save. Returns the bytes per buffer."""
        self._raise()
        _, size = layout(_entries(state, self._conn, self.prefix, self.layer_of))
        size = int(size * (1 + slack)) + (1 << 20)
        self._conn.reserve(size, buffer=False)
        while len(self._all) < self._count:
            self._free.put(self._add(size))
        return size

    def start(self, state: Any, step: int, extra: Optional[Dict[str, str]] = None, emergency: bool = False) -> float:
        """Queues a save of state at step and returns the seconds the caller was held. Call it
        right after the optimizer step and call before_update() before the next one."""
        self._raise()
        t0 = time.perf_counter()
        entries = _entries(state, self._conn, self.prefix, self.layer_of)
        index, size = layout(entries)
        b0 = time.perf_counter()
        buf = self._take(size)
        waited = time.perf_counter() - b0
        try:
            done = self._copy(entries, index, buf)
        except BaseException:
            self._free.put(buf)
            raise
        self._jobs.put((step, buf, index, extra, emergency, done, t0))
        held = time.perf_counter() - t0
        self.stats.saves += 1
        self.stats.bytes = size
        self.stats.held_s.append(held)
        self.stats.backpressure_s.append(waited)
        return held

    def before_update(self) -> None:
        """Makes the training stream wait for the copy of the last save before anything may
        change the saved tensors (the optimizer step); the host does not wait."""
        if self._copied is not None:
            self._torch.cuda.current_stream().wait_event(self._copied)
            self._copied = None

    def flush(self, timeout: Optional[float] = None) -> int:
        """Waits until every queued save is in the agent's hands; returns the newest step the
        agent took. Raises what went wrong in the background."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._jobs.unfinished_tasks and self._error is None:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"checkpoint saves still queued after {timeout} s")
            time.sleep(0.005)
        self._raise()
        return self.accepted

    def close(self) -> None:
        """Stops the background thread (after the queued saves) and frees the buffers."""
        self._jobs.put(None)
        self._thread.join()
        for b in self._all:
            b.close()
        self._all = []
        self._conn.close()

    # -- internals ------------------------------------------------------------------------------

    def _raise(self) -> None:
        if self._error is not None:
            raise RuntimeError(f"a background checkpoint save failed: {self._error}") from self._error

    def _add(self, size: int) -> _Pinned:
        b = _Pinned(self._conn.new_buffer(size), self._cuda)
        self.stats.pinned = self.stats.pinned or b.registered
        self._all.append(b)
        return b

    def _take(self, size: int) -> _Pinned:
        """A free buffer of at least size bytes: waits for one when all are in flight (the
        back-pressure of a disk slower than the checkpoints), replaces one that is too small."""
        if len(self._all) < self._count:
            return self._add(size)
        while True:
            try:
                b = self._free.get(timeout=0.5)
                break
            except queue.Empty:
                self._raise()
        if b.size < size:
            self._all.remove(b)
            b.close()
            b = self._add(max(size + size // 20, size + (1 << 20)))
        return b

    def _copy(self, entries: List[Entry], index: List[Dict[str, Any]], buf: _Pinned):
        """Queues every entry's bytes into buf at its offset; returns the event the copy ends
        with (None when nothing went through the side stream)."""
        torch = self._torch
        on_side = []
        for e, meta in zip(entries, index):
            n, off = meta["length"], meta["offset"]
            if n == 0:
                continue
            data = e.data
            if self._side is not None and torch.is_tensor(data) and data.is_cuda:
                on_side.append((data.detach(), off, n))
                continue
            # Bytes and CPU tensors (the tree, step counters, RNG states) are copied now, as a
            # blocking save copies them, before the loop goes on.
            _fill(e, buf.buf.mm, off)
        if not on_side:
            return None
        snap = self._snapshot(max(off + n for _, off, n in on_side))
        ready = torch.cuda.Event()
        ready.record(torch.cuda.current_stream())
        with torch.cuda.stream(self._side):
            self._side.wait_event(ready)
            raws = []
            for src, off, n in on_side:
                if not src.is_contiguous():
                    src = src.contiguous()
                src.record_stream(self._side)
                raws.append((src.reshape(-1).view(torch.uint8), off, n))
            if snap is not None:
                # One device-speed copy of everything, laid out as in the host buffer, in two
                # calls (each copy_ costs the host tens of µs: 2,400 of them held the loop
                # 0.15 s a save); the optimizer may go on once it is done. (The side stream runs
                # the previous save's host copies first, so the snapshot is free again here.)
                _stage(snap, raws)
                snapped = torch.cuda.Event()
                snapped.record(self._side)
                # Then to the host in a few large copies over runs of the layout that hold
                # only these tensors (and alignment padding).
                for lo, hi in _runs([(off, n) for _, off, n in raws], index):
                    _to_host(buf.host, lo, snap[lo:hi], SNAPSHOT_CHUNK)
            else:
                for raw, off, n in raws:
                    _to_host(buf.host, off, raw, self.chunk_bytes)
            done = torch.cuda.Event()
            done.record(self._side)
        self._copied = snapped if snap is not None else done
        return done

    def _snapshot(self, size: int):
        """The device snapshot buffer for a save of size CUDA bytes, or None (copies go straight
        to the host): decided at the first save, again when a save outgrows the buffer."""
        torch = self._torch
        if self._snapshot_mode == "off" or size == 0:
            return None
        if self._snap is not None and self._snap.numel() >= size:
            return self._snap
        if self._snap_decided and self._snap is None:
            return None
        self._snap_decided = True
        if self._snap is not None:
            self._side.synchronize()  # an outgrown snapshot is freed only once its copies ran
            self._snap = None
        if self._snapshot_mode == "auto":
            free, total = torch.cuda.mem_get_info()
            if not snapshot_fits(free, total, size):
                return None
        try:
            self._snap = torch.empty(size, dtype=torch.uint8, device=torch.cuda.current_device())
        except torch.cuda.OutOfMemoryError:
            if self._snapshot_mode == "on":
                raise
            return None
        self.stats.device_snapshot = True
        return self._snap

    def _hand_over(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                self._jobs.task_done()
                return
            step, buf, index, extra, emergency, done, t0 = job
            try:
                if self._error is None:
                    if done is not None:
                        done.synchronize()
                    self._conn.save_filled(step, buf.buf, index, extra=extra, emergency=emergency)
                    self.accepted = max(self.accepted, step)
                    self.stats.handed_s.append(time.perf_counter() - t0)
            except BaseException as e:  # raised to the loop by its next start() or flush()
                self._error = e
            finally:
                self._free.put(buf)
                self._jobs.task_done()
