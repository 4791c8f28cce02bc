"""The agent protocol: newline-delimited JSON over a Unix socket, tensor bytes in shared memory.

docs/checkpoints.md ("Node agent") is the reference. A save lays the tensors out in a file under
the agent's shared-memory directory (the client keeps and reuses it), and the agent copies them
out before it replies; a load gets a fresh file from the agent, which the client removes once it
has read it.
"""

import json
import mmap
import os
import secrets
import socket
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from .env import config_from_env

NO_LAYER = -1  # a tensor of no model layer: it goes with every pipeline stage on restore
ALIGN = 64  # each tensor starts at a multiple of this, so it can be viewed in place

DTYPE_SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}

_SHM_PREFIX = "schooner-ckpt-"


class AgentError(Exception):
    """A request the agent refused or failed; code is bad_request, no_checkpoint, closed or failed."""

    def __init__(self, code: str, message: str):
        super().__init__(f"checkpoint agent: {message}")
        self.code = code
        self.message = message


class NoCheckpoint(AgentError):
    """No committed, intact checkpoint where one was looked for."""


@dataclass
class Entry:
    """One tensor: its name (unique in the step across ranks, or identical where shared), model
    layer (NO_LAYER for none), dtype (F32, BF16, ...), shape, and data: any bytes-like object in
    little-endian row-major order, or whatever the fill/convert callbacks understand."""

    name: str
    layer: int
    dtype: str
    shape: Tuple[int, ...]
    data: Any = None

    @property
    def nbytes(self) -> int:
        size = DTYPE_SIZES.get(self.dtype)
        if size is None:
            raise ValueError(f"tensor {self.name}: unknown dtype {self.dtype!r} (want one of {' '.join(DTYPE_SIZES)})")
        n = size
        for d in self.shape:
            n *= int(d)
        return n


@dataclass
class Restored:
    """A restored step."""

    step: int
    plan: Dict[str, Any] = field(default_factory=dict)
    extra: Dict[str, str] = field(default_factory=dict)
    source: str = ""
    entries: List[Entry] = field(default_factory=list)


# fill(entry, buffer, offset) writes entry's nbytes bytes into the writable buffer at offset.
Fill = Callable[[Entry, mmap.mmap, int], None]
# convert(entry, buffer, offset) returns the restored data of entry from the buffer (a private
# copy-on-write mapping, so it may be viewed writable; it is closed after the last convert).
Convert = Callable[[Entry, mmap.mmap, int], Any]


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def layout(entries: Sequence[Entry]) -> Tuple[List[Dict[str, Any]], int]:
    """Where each entry lies in a save's shared-memory buffer, and the buffer's size."""
    index, size = [], 0
    for e in entries:
        size = _align(size)
        n = e.nbytes
        index.append({"name": e.name, "layer": int(e.layer), "dtype": e.dtype, "shape": [int(d) for d in e.shape], "offset": size, "length": n})
        size += n
    return index, size


class SaveBuffer:
    """A save's shared-memory file under the agent's directory, mapped read-write; the client
    keeps one and reuses it while big enough."""

    def __init__(self, directory: str, size: int, allocate: bool = False):
        self.path = os.path.join(directory, f"{_SHM_PREFIX}save-{os.getpid()}-{secrets.token_hex(8)}")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, size)
            if allocate:
                # Pages of a shared-memory file are allocated at first touch; allocating them
                # now moves that cost (seconds for gigabytes) out of the first save.
                os.posix_fallocate(fd, 0, size)
            self.mm = mmap.mmap(fd, size)
        except BaseException:
            os.close(fd)
            os.unlink(self.path)
            raise
        os.close(fd)
        self.size = size

    def close(self) -> None:
        try:
            self.mm.close()
        finally:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass


class Client:
    """A rank's connection to its node's checkpoint agent. One request at a time; a call that
    times out leaves the connection unusable, and a new Client is needed."""

    def __init__(self, socket_path: Optional[str] = None, timeout: Optional[float] = None):
        self.socket_path = socket_path or config_from_env().socket
        self.timeout = timeout
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.settimeout(timeout)
            self._sock.connect(self.socket_path)
        except OSError as e:
            self._sock.close()
            raise ConnectionError(f"connecting to the checkpoint agent at {self.socket_path}: {e}") from e
        self._rfile = self._sock.makefile("rb")
        self._broken: Optional[BaseException] = None
        self._buf: Optional[SaveBuffer] = None
        self.shm_dir: Optional[str] = None
        self.mode: Optional[str] = None
        self.rank: Optional[int] = None
        self.world: Optional[int] = None
        self.plan: Optional[Dict[str, Any]] = None

    # -- plumbing ---------------------------------------------------------------------------

    def _call(self, req: Dict[str, Any], timeout: Optional[float] = None) -> Dict[str, Any]:
        if self._broken is not None:
            raise ConnectionError(f"checkpoint agent connection unusable: {self._broken}")
        line = json.dumps(req, separators=(",", ":")).encode() + b"\n"
        try:
            self._sock.settimeout(self.timeout if timeout is None else timeout)
            self._sock.sendall(line)
            reply = self._rfile.readline()
        except (OSError, ValueError) as e:
            self._broken = e
            raise ConnectionError(f"{req['op']} request to the checkpoint agent: {e}") from e
        if not reply:
            self._broken = EOFError("agent closed the connection")
            raise ConnectionError(f"{req['op']} request: the checkpoint agent closed the connection")
        resp = json.loads(reply)
        if not resp.get("ok"):
            code, msg = resp.get("code", "failed"), resp.get("error", "unknown error")
            if code == "no_checkpoint":
                raise NoCheckpoint(code, msg)
            raise AgentError(code, msg)
        return resp

    def close(self) -> None:
        """Closes the connection and removes the save buffer."""
        if self._broken is None:
            self._broken = EOFError("client closed")
        for closer in (self._rfile.close, self._sock.close):
            try:
                closer()
            except OSError:
                pass
        if self._buf is not None:
            self._buf.close()
            self._buf = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- requests ---------------------------------------------------------------------------

    def hello(self, rank: Optional[int] = None, world: Optional[int] = None, plan: Optional[Dict[str, Any]] = None) -> int:
        """Binds the connection to rank (the agent opens the rank's engine) and returns the
        rank's newest committed step, -1 for none. Unset arguments come from the environment."""
        cfg = config_from_env(self.socket_path, rank, world, plan)
        resp = self._call({"op": "hello", "rank": cfg.rank, "world": cfg.world, "plan": cfg.plan})
        self.shm_dir, self.mode, self.rank, self.world = resp["shm_dir"], resp.get("mode"), cfg.rank, cfg.world
        self.plan = cfg.plan
        return int(resp.get("latest", -1))

    def sibling(self, timeout: Optional[float] = None) -> "Client":
        """A second connection to the same agent that speaks for the same rank, for a thread
        that saves in the background while this one keeps polling (one request at a time per
        connection)."""
        if self.rank is None:
            raise RuntimeError("sibling before hello")
        c = Client(self.socket_path, self.timeout if timeout is None else timeout)
        try:
            c.hello(rank=self.rank, world=self.world, plan=self.plan)
        except BaseException:
            c.close()
            raise
        return c

    def save(
        self,
        step: int,
        entries: Sequence[Entry],
        extra: Optional[Dict[str, str]] = None,
        emergency: bool = False,
        fill: Optional[Fill] = None,
    ) -> bool:
        """Copies the entries into shared memory and hands them to the agent; returns once the
        agent has copied them out, saying whether it took this as an emergency save (asked
        for, or after a preemption notice). fill, when given, writes each entry's bytes
        itself (the PyTorch layer copies tensors straight from the device)."""
        if self.shm_dir is None:
            raise RuntimeError("save before hello")
        index, size = layout(entries)
        buf = self._buffer(size)
        for e, meta in zip(entries, index):
            n, off = meta["length"], meta["offset"]
            if n == 0:
                continue
            if fill is not None:
                fill(e, buf.mm, off)
                continue
            with memoryview(e.data) as mv, mv.cast("B") as raw:
                if raw.nbytes != n:
                    raise ValueError(f"tensor {e.name}: {e.dtype} {tuple(e.shape)} needs {n} bytes, data has {raw.nbytes}")
                buf.mm[off : off + n] = raw
        return self.save_filled(step, buf, index, extra=extra, emergency=emergency)

    def save_filled(
        self,
        step: int,
        buf: "SaveBuffer",
        index: List[Dict[str, Any]],
        extra: Optional[Dict[str, str]] = None,
        emergency: bool = False,
    ) -> bool:
        """Hands the agent a buffer the caller has already filled as index (from layout) says;
        returns once the agent has copied it out, as save does."""
        req = {"op": "save", "step": int(step), "shm": buf.path, "tensors": index, "emergency": bool(emergency)}
        if extra:
            req["extra"] = {str(k): str(v) for k, v in extra.items()}
        return bool(self._call(req).get("emergency", False))

    def reserve(self, size: int, buffer: bool = True) -> int:
        """Readies everything a save of size bytes needs, ahead of the first save: this
        client's shared-memory buffer (its pages allocated; buffer=False leaves it out, for a
        caller with buffers of its own) and the agent's slots for the rank (space allocated
        and synced). Returns how many of the agent's slots hold size now."""
        if self.shm_dir is None:
            raise RuntimeError("reserve before hello")
        slots = int(self._call({"op": "reserve", "bytes": int(size)}).get("slots", 0))
        if buffer:
            self._buffer(size, allocate=True)
        return slots

    def new_buffer(self, size: int, allocate: bool = True) -> "SaveBuffer":
        """A shared-memory save buffer of size bytes in the agent's directory that the caller
        owns (and closes), for callers that keep several saves in flight."""
        if self.shm_dir is None:
            raise RuntimeError("new_buffer before hello")
        return SaveBuffer(self.shm_dir, size, allocate)

    def _buffer(self, size: int, allocate: bool = False) -> SaveBuffer:
        if self._buf is None or self._buf.size < size:
            want = max(size + size // 2, 1 << 20)
            new = SaveBuffer(self.shm_dir, want, allocate)
            if self._buf is not None:
                self._buf.close()
            self._buf = new
        return self._buf

    def wait(self, step: int, durable: str = "local", timeout: Optional[float] = None) -> int:
        """Blocks until step is committed locally ("local") or durable in the store
        ("remote"); returns that step, or a newer one that superseded it."""
        return int(self._call({"op": "wait", "step": int(step), "durable": durable}, timeout=timeout)["step"])

    def load(
        self,
        step: int = -1,
        rank: Optional[int] = None,
        stage: Optional[int] = None,
        plan: Optional[Dict[str, Any]] = None,
        layers: Optional[Tuple[int, int]] = None,
        all: bool = False,
        convert: Optional[Convert] = None,
    ) -> Restored:
        """Restores step (-1: the newest durable one): by default what this rank (or rank)
        saved; or pipeline stage of plan, layers [first, end), or all tensors. Tensors of no
        layer come with every stage and layer range. Each entry's data is bytes, or what
        convert returns."""
        req: Dict[str, Any] = {"op": "load", "step": int(step)}
        if rank is not None:
            req["rank"] = int(rank)
        if stage is not None:
            req["stage"] = int(stage)
        if plan is not None:
            req["plan"] = plan
        if layers is not None:
            req["layers"] = [int(layers[0]), int(layers[1])]
        if all:
            req["all"] = True
        resp = self._call(req)
        path = resp["shm"]
        try:
            entries = _read_restore(path, int(resp.get("size", 0)), resp.get("tensors") or [], convert)
        finally:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        return Restored(step=int(resp["step"]), plan=resp.get("plan") or {}, extra=resp.get("extra") or {}, source=resp.get("source", ""), entries=entries)

    def status(self) -> Dict[str, Any]:
        """The agent's status (ranks, durable steps, upload backlog, notice) as a dict."""
        resp = self._call({"op": "status"})
        return resp.get("status") or {}

    def poll(self) -> Dict[str, Any]:
        """Cheap, for every step: {"checkpoint_now": bool, "deadline": RFC 3339 str or None}."""
        resp = self._call({"op": "poll"})
        return {"checkpoint_now": bool(resp.get("checkpoint_now", False)), "deadline": resp.get("deadline")}


def _read_restore(path: str, size: int, index: Iterable[Dict[str, Any]], convert: Optional[Convert]) -> List[Entry]:
    entries = [Entry(t["name"], int(t["layer"]), t["dtype"], tuple(t.get("shape") or ()), None) for t in index]
    offsets = [(int(t["offset"]), int(t["length"])) for t in index]
    if size == 0:
        for e in entries:
            e.data = convert(e, None, 0) if convert else b""
        return entries
    for e, (off, n) in zip(entries, offsets):
        if off < 0 or n < 0 or off + n > size:
            raise ValueError(f"restore: tensor {e.name} lies outside the {size} bytes sent")
    # A converter with map_file maps the file itself and may hand out views of that mapping
    # instead of copies (the torch converter: its tensors own the mapping, so it lives as long
    # as they do); otherwise each entry is converted from a private mapping closed here.
    map_file = getattr(convert, "map_file", None)
    if map_file is not None:
        whole = map_file(path, size)
        for e, (off, _) in zip(entries, offsets):
            e.data = convert(e, whole, off)
        return entries
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY)
    try:
        for e, (off, n) in zip(entries, offsets):
            e.data = convert(e, mm, off) if convert else mm[off : off + n]
    finally:
        mm.close()
    return entries
