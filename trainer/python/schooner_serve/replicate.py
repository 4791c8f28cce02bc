"""KV replication to a KV-cache holder (docs/serving-protocol.md section 3).

HolderWriter streams puts from a sender thread fed by a bounded queue, so the compute thread only
gathers (and on a GPU starts one non-blocking copy to pinned host memory on a side stream) and
moves on; a second thread reads the holder's acks. When the queue is full the compute thread
waits (back-pressure: a replica never gets gaps); `blocked_s` says how long it waited. The holder
refuses one request of a frame with `error full` (its budget) or `error conflict` (the put does
not continue the replica): the writer stops replicating that request (it serves on, unreplicated,
and says so on stderr) until the request is dropped; any other error ends replication.

fetch() is the reader side: get → chunks → end; over a unix socket get with shm → one shm frame
whose memory file (passed as SCM_RIGHTS) is mapped, not copied.
"""

from __future__ import annotations

import array
import json
import mmap
import os
import queue
import socket
import struct
import sys
import tempfile
import threading
import time
import warnings

import torch

from . import frame


class _PinnedPool:
    """Page-locked host buffers reused from step to step: a decode step's frame is the same size
    every step, and allocating page-locked memory per step can stall the device (the allocator
    falls back to cudaHostAlloc, which synchronizes) exactly where streaming must cost nothing."""

    def __init__(self, keep_bytes: int = 256 << 20):
        self._free: dict[int, list] = {}
        self._lock = threading.Lock()
        self._kept, self.keep_bytes = 0, keep_bytes  # batches vary: keep a bounded amount

    def take(self, nbytes: int):
        with self._lock:
            free = self._free.get(nbytes)
            if free:
                self._kept -= nbytes
                return free.pop()
        return torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)

    def give(self, buf) -> None:
        with self._lock:
            if self._kept + buf.numel() > self.keep_bytes:
                return  # freed: the allocator's own cache takes it
            self._kept += buf.numel()
            self._free.setdefault(buf.numel(), []).append(buf)


class _HostCopy:
    """A device tensor on its way to host memory: on CUDA one non-blocking copy into pinned memory
    (from `pool`) on a side stream, waited for by the sender thread, which gives the buffer back
    once sent; on CPU the tensor itself."""

    _streams: dict = {}

    def __init__(self, t, pool: _PinnedPool | None = None):
        self.pool, self.buf = pool, None
        if t.device.type == "cuda":
            side = self._streams.get(t.device)
            if side is None:
                side = self._streams[t.device] = torch.cuda.Stream(device=t.device)
            side.wait_stream(torch.cuda.current_stream(t.device))
            nbytes = t.numel() * t.element_size()
            if pool is not None:
                self.buf = pool.take(nbytes)
                self.host = self.buf.view(t.dtype).view(t.shape)
            else:
                self.host = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
            with torch.cuda.stream(side):
                self.host.copy_(t, non_blocking=True)
                self.event = torch.cuda.Event()
                self.event.record(side)
            t.record_stream(side)
        else:
            self.host, self.event = t.contiguous(), None

    def bytes(self):
        if self.event is not None:
            self.event.synchronize()
        return frame.tensor_bytes(self.host)

    def done(self) -> None:
        """The bytes are sent: the pinned buffer may carry another step."""
        if self.buf is not None and self.pool is not None:
            self.host, buf, self.buf = None, self.buf, None
            self.pool.give(buf)


class HolderWriter:
    def __init__(self, addr: str, deployment: str, stage: int, queue_size: int = 64, log=sys.stderr):
        self.addr, self.log = addr, log
        self.conn = frame.Conn.connect(addr)
        self.conn.handshake("writer", deployment, stage)
        self.q: queue.Queue = queue.Queue(maxsize=queue_size)
        self._pinned = _PinnedPool()  # decode steps' host buffers, reused
        self.acks = 0
        self.acked: dict[str, int] = {}
        self.frames = self.bytes_sent = 0
        self.blocked_s = 0.0
        self.full = False                 # the holder refused something as full
        self.refused: set[str] = set()    # requests the holder refused: not replicated any more
        self.dropped = 0
        self.dead: str | None = None
        self._cv = threading.Condition()
        self._sender = threading.Thread(target=self._send_loop, name="kv-sender", daemon=True)
        self._acker = threading.Thread(target=self._ack_loop, name="kv-acks", daemon=True)
        self._sender.start()
        self._acker.start()

    @property
    def active(self) -> bool:
        return self.dead is None

    def _enqueue(self, item) -> None:
        if not self.active:
            return
        try:
            self.q.put_nowait(item)
        except queue.Full:
            t = time.perf_counter()
            self.q.put(item)
            self.blocked_s += time.perf_counter() - t

    def put_prompt(self, request: str, layer: int, t0: int, t1: int, k, v, last: bool = False,
                   layers: tuple[int, int] | None = None, step: int = 0) -> None:
        """K, V [tokens, kv_heads, head_dim] of positions [t0, t1) of global layer `layer`. The put
        that completes the request's cache (its last local layer) has last=True, the stage's
        `layers` and the `step` the cache stands at (0 after a prefill, k after a re-prefill)."""
        if request in self.refused:
            return
        kv = torch.stack((k, v)).transpose(1, 2)  # [2, kv_heads, tokens, head_dim]
        h = {"op": "put", "request": request, "kind": "prompt", "layer": layer, "tokens": [t0, t1],
             "dtype": frame.dtype_name(kv.dtype), "shape": list(kv.shape)}
        if last:
            h.update({"last": True, "layers": list(layers), "step": step})
        self._enqueue((h, _HostCopy(kv.contiguous())))

    def put_step(self, entries: list[dict], layers: tuple[int, int], kv) -> None:
        """One decode step of every batched sequence: kv [n_entries, layers, 2, kv_heads, head_dim];
        entries [{"request","token":position,"step":k}] (each with its own step); the frame's
        step is the smallest. Requests the holder refused are left out."""
        if any(e["request"] in self.refused for e in entries):
            keep = [i for i, e in enumerate(entries) if e["request"] not in self.refused]
            if not keep:
                return
            entries = [entries[i] for i in keep]
            kv = kv[torch.tensor(keep, device=kv.device)]
        h = {"op": "put_step", "step": min(e["step"] for e in entries), "entries": entries,
             "layers": list(layers), "dtype": frame.dtype_name(kv.dtype), "shape": list(kv.shape)}
        self._enqueue((h, _HostCopy(kv, self._pinned)))

    def drop(self, request: str) -> None:
        """Free the request's replica (answered with `dropped`); it may be replicated anew."""
        self._enqueue(({"op": "drop", "request": request}, None))
        self.refused.discard(request)

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until everything queued is sent and every sent frame's acks have come."""
        end = time.monotonic() + timeout
        self.q.join()
        with self._cv:
            while self.active and self._pending_acks > 0 and time.monotonic() < end:
                self._cv.wait(0.05)
        return self.active

    _pending_acks = 0

    def _send_loop(self) -> None:
        while True:
            h, data = self.q.get()
            try:
                if h is None:
                    return
                if self.active:
                    payload = data.bytes() if data is not None else b""
                    n = len(h["entries"]) if h["op"] == "put_step" else (1 if h["op"] == "put" else 0)
                    with self._cv:
                        self._pending_acks += n
                    self.conn.send(h, payload)
                    self.frames += 1
                    self.bytes_sent += len(payload)
                    payload = None
                if data is not None:
                    data.done()
            except (OSError, frame.Closed) as e:
                self._die(f"send: {e}")
            finally:
                self.q.task_done()

    def _ack_loop(self) -> None:
        try:
            while True:
                h, _ = self.conn.recv()
                op = h["op"]
                if op == "ack":
                    with self._cv:
                        self.acks += 1
                        self._pending_acks -= 1
                        r = h.get("request")
                        self.acked[r] = max(self.acked.get(r, -1), int(h.get("step", -1)))
                        self._cv.notify_all()
                elif op == "error" and h.get("code") in ("full", "conflict") and h.get("request"):
                    # One request refused; the connection and the other requests go on.
                    r = h["request"]
                    with self._cv:
                        self._pending_acks -= 1
                        self.full = self.full or h["code"] == "full"
                        new = r not in self.refused
                        self.refused.add(r)
                        self._cv.notify_all()
                    if new:
                        print(f"schooner_serve: KV holder {self.addr} refused {r} ({h['code']}: {h.get('message')}): "
                              "serving it on, unreplicated", file=self.log, flush=True)
                elif op == "error":
                    self._die(f"holder error {h.get('code')}: {h.get('message')}")
                    return
                elif op == "dropped":
                    self.dropped += 1
        except (OSError, frame.Closed, frame.FrameError) as e:
            self._die(f"recv: {e}")

    def _die(self, why: str) -> None:
        if self.dead is None and not self.conn.closed:
            print(f"schooner_serve: KV replication to {self.addr} stopped ({why}): serving on, unreplicated",
                  file=self.log, flush=True)
        if self.dead is None:
            self.dead = why
        with self._cv:
            self._cv.notify_all()

    def stats(self) -> dict:
        return {"frames": self.frames, "bytes": self.bytes_sent, "acks": self.acks, "queued": self.q.qsize(),
                "blocked_s": round(self.blocked_s, 6), "full": self.full, "refused": len(self.refused),
                "dead": self.dead}

    def close(self) -> None:
        try:
            self.q.put((None, None), timeout=5)
        except queue.Full:
            pass
        self.conn.close()


class Replica:
    """A fetched replica. `chunks` is [(layers (l0, l1), tokens (t0, t1), tensor [layers, 2, kv_heads,
    t1-t0, head_dim])...] in token order; `acked` the step they stand at (-1: nothing complete).
    Over shm (`shm` True) the tensors view one mapped memory file, whole in `buffer` (uint8), with
    each chunk's byte range in `spans`; close() unmaps it (the tensors must not be used after)."""

    def __init__(self, chunks, acked, buffer=None, spans=None, mm=None, lent=False, from_step=0):
        self.chunks, self.acked, self.buffer, self.spans, self._mm = chunks, acked, buffer, spans, mm
        # The from_step the holder repeated: the chunks start at that step's position, without
        # the prompt. 0 for a whole replica, also when a get from a step reached a holder that
        # predates the field (it sent everything from token 0: the chunks' tokens say so).
        self.from_step = from_step
        self.lent = lent  # the chunks lie in a LentReader's memory (valid until its next fetch)
        # The prompt's pieces where they lie in the holder's arena (a LentReader's streamed fetch
        # with an arena): placed before `chunks`, which then hold the decode steps only.
        self.arena_chunks: list = []

    @property
    def shm(self) -> bool:
        return self._mm is not None or self.lent

    @property
    def nbytes(self) -> int:
        arena = sum(t.numel() * t.element_size() for _, _, t in self.arena_chunks)
        if self.buffer is not None:
            return self.buffer.numel() + arena
        return sum(t.numel() * t.element_size() for _, _, t in self.chunks) + arena

    def close(self) -> None:
        self.chunks, self.buffer, self.arena_chunks = [], None, []
        _unmap(None, False, self._mm)
        self._mm = None


def _recv_exact(sock, n: int, fds: list) -> bytes:
    """n bytes from a unix socket, collecting any descriptors passed with them."""
    buf = bytearray()
    while len(buf) < n:
        msg, anc, _flags, _addr = sock.recvmsg(n - len(buf), socket.CMSG_SPACE(16 * 4))
        if not msg:
            raise frame.Closed(f"connection closed inside a frame ({len(buf)} of {n} bytes)")
        for level, typ, data in anc:
            if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                fds.extend(array.array("i", data[: len(data) - len(data) % 4]))
        buf += msg
    return bytes(buf)


def _chunk_views(meta, buf, size: int):
    """The chunks of an shm answer as views of buf (uint8, size bytes) and their byte spans."""
    chunks, spans = [], []
    for c in meta:
        off, n = int(c["offset"]), int(c["length"])
        if off < 0 or off + n > size:
            raise frame.FrameError(f"shm chunk [{off}, {off + n}) is outside the {size}-byte memory")
        t = buf[off:off + n].view(frame.torch_dtype(c["dtype"])).view(*c["shape"])
        chunks.append((tuple(c["layers"]), tuple(c["tokens"]), t))
        spans.append((off, n))
    return chunks, spans


def _read_unix_frame(conn, fds: list):
    """One frame read straight from a unix socket with recvmsg, so a descriptor riding on its
    first bytes is kept (the connection's buffered reader holds nothing between answers)."""
    (n,) = struct.unpack(">I", _recv_exact(conn.sock, 4, fds))
    if n > frame.MAX_HEADER:
        raise frame.FrameError(f"header of {n} bytes is over {frame.MAX_HEADER}")
    h = json.loads(_recv_exact(conn.sock, n, fds).decode())
    (p,) = struct.unpack(">Q", _recv_exact(conn.sock, 8, fds))
    return h, _recv_exact(conn.sock, p, fds) if p else b""


def _shm_replica(h: dict, fds: list) -> Replica:
    acked, from_step = int(h.get("acked_step", -1)), int(h.get("from_step", 0) or 0)
    meta = h.get("chunks") or []
    if not meta:
        return Replica([], acked, from_step=from_step)
    if not fds:
        raise frame.FrameError("holder answered shm without a memory file")
    fd = fds.pop(0)
    try:
        size = os.fstat(fd).st_size
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
        mm = mmap.mmap(fd, size, flags=flags, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)
    buf = torch.frombuffer(mm, dtype=torch.uint8) if size else torch.empty(0, dtype=torch.uint8)
    try:
        chunks, spans = _chunk_views(meta, buf, size)
    except frame.FrameError:
        del buf
        mm.close()
        raise
    return Replica(chunks, acked, buf, spans, mm, from_step=from_step)


def fetch_replica(addr: str, deployment: str, stage: int, request: str, shm: bool | None = None,
                  wait_ms: int = 0, expect: bool = False, from_step: int = 0, want_step: int = 0,
                  timeout: float | None = None) -> Replica:
    """A request's replica from a holder. Over a unix socket (`unix:` address) it asks for the shm
    answer (one memory file passed with the frame, mapped here: no copy); over TCP, or from a
    holder that answers by chunks, it reads the chunks. shm=False forces chunks. wait_ms > 0 lets
    the holder hold the answer that long while the prompt is incomplete and another process's
    writer of the stage still sends (a handed-over stage's last frames); with expect, whether or
    not anyone sends yet (the prompt is known to be coming: disaggregation, disagg.py). from_step > 0
    asks for the decode steps from that one on, without the prompt (a preloaded replica's delta);
    the Replica's from_step says whether the holder honoured it; want_step > 0 has a waiting get wait
    for that step rather than for the complete prompt. timeout bounds each wait for the holder
    (socket.timeout, an OSError, when it is silent longer: a preload's time bound; None waits)."""
    if shm is None:
        shm = addr.startswith("unix:") and os.environ.get("SCHOONER_KV_SHM", "1") != "0"
    conn = frame.Conn.connect(addr, **({"timeout": timeout} if timeout is not None else {}))
    fds: list[int] = []
    try:
        conn.sock.settimeout(timeout)
        conn.handshake("reader", deployment, stage)
        conn.send({"op": "get", "request": request, **({"shm": True} if shm else {}), **_wait(wait_ms, expect, want_step),
                   **_from(from_step)})
        if shm:
            h, p = _read_unix_frame(conn, fds)
            if h.get("op") == "shm" and not p:
                return _shm_replica(h, fds)
            first = (h, p)
        else:
            first = None
        chunks = []
        while True:
            h, p = first if first is not None else conn.recv()
            first = None
            if h["op"] == "chunk":
                chunks.append((tuple(h["layers"]), tuple(h["tokens"]), frame.tensor_from(p, h["dtype"], h["shape"])))
            elif h["op"] == "end":
                return Replica(chunks, int(h.get("acked_step", -1)), from_step=int(h.get("from_step", 0) or 0))
            elif h["op"] == "error":
                raise frame.FrameError(f"holder: {h.get('code')}: {h.get('message')}", h.get("code", "bad_request"))
            else:
                raise frame.FrameError(f"holder answered get with {h['op']!r}")
    finally:
        for fd in fds:
            os.close(fd)
        conn.close()


def _wait(wait_ms: int, expect: bool, want_step: int = 0) -> dict:
    """A get's waiting fields (docs/serving-protocol.md section 3, "Waiting gets")."""
    if wait_ms <= 0:
        return {}
    return {"wait_ms": int(wait_ms), **({"expect": True} if expect else {}),
            **({"want_step": int(want_step)} if want_step > 0 else {})}


def _from(from_step: int) -> dict:
    """A get's from_step field (docs/serving-protocol.md section 3, "Gets from a step")."""
    return {"from_step": int(from_step)} if from_step > 0 else {}


def fetch(addr: str, deployment: str, stage: int, request: str, shm: bool | None = None):
    """A request's replica from a holder: ([(layers (l0, l1), tokens (t0, t1), tensor
    [layers, 2, kv_heads, t1-t0, head_dim])...], acked_step). Over shm the tensors view a mapping
    that lives as long as they do."""
    r = fetch_replica(addr, deployment, stage, request, shm)
    return r.chunks, r.acked


def _unmap(buf, pinned: bool, mm) -> None:
    """Unregister a page-locked mapping and unmap it; a view that outlives this keeps the
    mapping until the last view goes."""
    if buf is not None and pinned:
        torch.cuda.cudart().cudaHostUnregister(buf.data_ptr())
    if mm is not None:
        try:
            mm.close()
        except BufferError:
            pass


LEND_DIR, LEND_PREFIX = "/dev/shm", "schooner-kvrecv-"


class LentReader:
    """A reader that restores through memory it lent the holder (docs/serving-protocol.md,
    section 3, lend): a memory file of `size` bytes, made, mapped and — on a CUDA device —
    page-locked once, ahead of any failure, then lent over a unix socket. Each fetch has the
    holder write the replica straight into it, so a restore is the holder's copy plus one DMA:
    no memory file to create and fault in, no page-locking at failure time. A replica larger
    than the memory comes back in a memory file of its own, as with fetch_replica. The file is
    unlinked once the holder has mapped it: nothing is left behind if this process dies.

    With arena, the reader also asks for the holder's arena (the shared memory it keeps prompts
    in), maps it read-only and, on a CUDA device, page-locks it read-only: a streamed fetch then
    gets the prompt's pieces where they lie, with no copy by the holder, and only the decode
    steps come through the lent memory. Where the holder has no arena or it cannot be
    page-locked, fetches copy as before (said on stdout)."""

    # cudaHostRegisterReadOnly: the device only reads the memory (the mapping is read-only).
    _REGISTER_READ_ONLY = 8

    def __init__(self, addr: str, deployment: str, stage: int, size: int, device=None, arena: bool = False):
        if not addr.startswith("unix:"):
            raise ValueError(f"lending memory needs the holder's unix socket, not {addr!r}")
        if size <= 0:
            raise ValueError(f"lent memory of {size} bytes")
        self.size, self.pinned, self._lock = size, False, threading.Lock()
        self.arena, self.arena_size, self._arena_mm, self._arena_pinned = None, 0, None, False
        fd, path = tempfile.mkstemp(prefix=LEND_PREFIX, dir=LEND_DIR)
        self.path = path
        try:
            os.ftruncate(fd, size)
            self._mm = mmap.mmap(fd, size, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                                 prot=mmap.PROT_READ | mmap.PROT_WRITE)
            os.close(fd)
            fd = -1
            self.buffer = torch.frombuffer(self._mm, dtype=torch.uint8)
            if device is not None and torch.device(device).type == "cuda":
                self.pinned = int(torch.cuda.cudart().cudaHostRegister(self.buffer.data_ptr(), size, 0)) == 0
            self.conn = frame.Conn.connect(addr)
            fds: list[int] = []
            try:
                self.conn.handshake("reader", deployment, stage)
                self.conn.send({"op": "lend", "path": path, "size": size, **({"arena": True} if arena else {})})
                h, _ = _read_unix_frame(self.conn, fds) if arena else self.conn.recv()
                if h.get("op") == "lent" and arena:
                    self._map_arena(h, fds, device)
            except BaseException:
                self.conn.close()
                raise
            finally:
                for f in fds:
                    os.close(f)
            if h.get("op") != "lent":
                self.conn.close()
                raise frame.FrameError(f"holder refused the lent memory: {h.get('message', h)}", h.get("code", "bad_request"))
        except BaseException:
            if fd >= 0:
                os.close(fd)
            self._release_memory()
            raise
        finally:
            os.unlink(path)

    def _map_arena(self, h: dict, fds: list, device) -> None:
        """Map the arena whose descriptor came with lent, read-only; on a CUDA device page-lock
        it too, or leave it (no arena) when that fails."""
        size = int(h.get("arena_size", 0))
        if not fds or size <= 0:
            print(f"schooner_serve: the holder lent no arena ({h.get('arena_error', 'it has none')}); "
                  "restores copy the prompt", flush=True)
            return
        mm = mmap.mmap(fds[0], size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # read-only on purpose: nothing here writes the arena
            buf = torch.frombuffer(mm, dtype=torch.uint8)
        if device is not None and torch.device(device).type == "cuda":
            rc = int(torch.cuda.cudart().cudaHostRegister(buf.data_ptr(), size, self._REGISTER_READ_ONLY))
            if rc != 0:
                del buf
                mm.close()
                print(f"schooner_serve: page-locking the holder's {size}-byte arena read-only failed (cuda error {rc}); "
                      "restores copy the prompt", flush=True)
                return
            self._arena_pinned = True
        self.arena, self.arena_size, self._arena_mm = buf, size, mm

    def fetch(self, request: str, on_filled=None, wait_ms: int = 0, expect: bool = False, from_step: int = 0,
              want_step: int = 0, timeout: float | None = None) -> Replica:
        """The request's replica; when it lies in the lent memory (`lent`), its tensors are valid
        until the next fetch. With on_filled, the holder streams: on_filled(chunks) is called with
        the chunks [(layers, tokens, tensor)] as they land, in order, so the caller can move each
        on (to its GPU) while the holder copies the next; all have come when fetch returns. An
        exception in on_filled leaves the connection mid-answer: the reader is closed. With an
        arena (streamed fetches only), the prompt's pieces, one layer each, are the first chunks
        handed to on_filled (views of the arena, valid until the next fetch), then the steps.
        wait_ms, expect, from_step, want_step and timeout as in fetch_replica (a get from a step gets
        no arena pieces); a timeout leaves the connection mid-answer, so the caller closes the
        reader."""
        fds: list[int] = []
        with self._lock:
            try:
                self.conn.sock.settimeout(timeout)
                ask = {"op": "get", "request": request, "into": True, **_wait(wait_ms, expect, want_step), **_from(from_step)}
                if on_filled is not None:
                    ask["stream"] = True
                    if self.arena is not None:
                        ask["arena"] = True
                self.conn.send(ask)
                h, p = _read_unix_frame(self.conn, fds)
                if h.get("op") == "error":
                    raise frame.FrameError(f"holder: {h.get('code')}: {h.get('message')}", h.get("code", "bad_request"))
                if h.get("op") != "shm" or p:
                    raise frame.FrameError(f"holder answered get into with {h.get('op')!r}")
                if not h.get("into"):
                    return _shm_replica(h, fds)
                chunks, spans = _chunk_views(h.get("chunks") or [], self.buffer, self.size)
                pieces = []
                if h.get("arena"):
                    if self.arena is None or on_filled is None:
                        raise frame.FrameError("holder answered with arena pieces that were not asked for")
                    pieces, _ = _chunk_views(h["arena"], self.arena, self.arena_size)
                if h.get("stream"):
                    try:
                        if pieces:
                            on_filled(pieces)
                        self._await_filled(request, chunks, on_filled)
                    except BaseException:
                        self.conn.close()  # filled frames may still be on their way
                        raise
                total = max((o + n for o, n in spans), default=0)
                rep = Replica(chunks, int(h.get("acked_step", -1)), self.buffer[:total], spans, lent=True,
                              from_step=int(h.get("from_step", 0) or 0))
                rep.arena_chunks = pieces
                return rep
            finally:
                if timeout is not None and not self.conn.closed:
                    self.conn.sock.settimeout(None)
                for fd in fds:
                    os.close(fd)

    def _await_filled(self, request: str, chunks, on_filled) -> None:
        done = 0
        while True:
            h, p = _read_unix_frame(self.conn, [])
            if h.get("op") != "filled" or h.get("request") != request or p:
                raise frame.FrameError(f"holder sent {h.get('op')!r} inside the streamed get of {request}")
            upto = int(h.get("upto", 0))
            if not done <= upto <= len(chunks):
                raise frame.FrameError(f"filled up to chunk {upto} of {len(chunks)} after {done}")
            if upto > done:
                on_filled(chunks[done:upto])
                done = upto
            if done == len(chunks):
                return

    def _release_memory(self) -> None:
        _unmap(getattr(self, "arena", None), self._arena_pinned, getattr(self, "_arena_mm", None))
        self.arena, self._arena_pinned, self._arena_mm = None, False, None
        _unmap(getattr(self, "buffer", None), self.pinned, getattr(self, "_mm", None))
        self.buffer, self.pinned, self._mm = None, False, None

    def close(self) -> None:
        self.conn.close()
        self._release_memory()
