"""Frames of docs/serving-protocol.md: uint32 BE header length, JSON header with "op",
uint64 BE payload length, payload (raw little-endian row-major tensor bytes)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import threading
import warnings

# Headers carry names and shapes, and one long list: a submit's prompt token ids, up to the
# largest max_context (262,144 tokens, 1.8 MB as JSON); the bound is against garbage lengths
# (internal/frame's MaxHeader, the same).
MAX_HEADER = 4 << 20
DEFAULT_MAX_PAYLOAD = 8 << 30
VERSION = 1

# This process's identity in hellos: the KV-cache holder does not hold a reader's waiting get
# for writers of the reader's own process (docs/serving-protocol.md section 3, "Waiting gets").
PROCESS = f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}"


class FrameError(Exception):
    """A malformed or oversized frame: answered with error bad_request, then the connection closes."""

    def __init__(self, message: str, code: str = "bad_request"):
        super().__init__(message)
        self.code = code


class Closed(Exception):
    """The peer closed the connection between frames."""


def encode(header: dict, payload=b"") -> bytes:
    h = json.dumps(header, separators=(",", ":")).encode()
    if len(h) > MAX_HEADER:
        raise FrameError(f"header of {len(h)} bytes is over {MAX_HEADER}")
    return b"".join((struct.pack(">I", len(h)), h, struct.pack(">Q", len(payload)), bytes(payload)))


def _read_exact(f, n: int, inside: bool) -> bytes:
    buf = f.read(n) if n else b""
    if len(buf) < n:
        if not buf and not inside:
            raise Closed("connection closed")
        raise Closed(f"connection closed inside a frame ({len(buf)} of {n} bytes)")
    return buf


class PayloadPool:
    """Receive buffers for large payloads, used again and again. A pipeline stage receives its
    predecessor's hidden states (67 MB for an 8k-token prefill of an 8B model) in one frame;
    read into fresh memory, every page of it faults on the way in, and the read ran at half the
    speed of a read into memory already used (1.3–1.7 against 2.5 GB/s over loopback TCP on the
    dev machine). take() hands out the smallest idle buffer that fits (or a new one), give()
    takes back what take() gave once its user is done with it; at most `keep` idle buffers stay.
    Payloads under min_size are read as before. Safe from any thread."""

    def __init__(self, keep: int = 2, min_size: int = 64 << 10):
        self.keep, self.min_size = keep, min_size
        self._idle: list[bytearray] = []
        self._lock = threading.Lock()
        self.made = 0  # buffers allocated, for tests and traces

    def take(self, n: int) -> bytearray:
        with self._lock:
            fits = [b for b in self._idle if len(b) >= n]
            if fits:
                buf = min(fits, key=len)
                self._idle.remove(buf)
                return buf
            self.made += 1
        return bytearray(n)

    def give(self, payload) -> None:
        """Takes back the buffer behind a payload read() read into it, unless something still
        views it (a tensor made from it: then it is left to the garbage collector, never used
        again); anything else (bytes, an empty payload) is ignored. The payload must not be used
        afterwards."""
        buf = payload.obj if isinstance(payload, memoryview) else None
        if not isinstance(buf, bytearray):
            return
        try:
            payload.release()
        except BufferError:
            return
        with self._lock:
            self._idle.append(buf)
            if len(self._idle) > self.keep:
                self._idle.remove(min(self._idle, key=len))


def _read_into(f, buf: bytearray, n: int) -> memoryview:
    mv = memoryview(buf)[:n]
    got = 0
    while got < n:
        k = f.readinto(mv[got:])
        if not k:
            mv.release()
            raise Closed(f"connection closed inside a frame ({got} of {n} bytes)")
        got += k
    return mv


def read(f, max_payload: int = DEFAULT_MAX_PAYLOAD, pool: PayloadPool | None = None):
    """One frame from a binary file object (socket.makefile('rb')): (header dict, payload bytes;
    with a pool, a payload of at least pool.min_size bytes is a memoryview over one of its
    buffers, to give back when done). Raises Closed at a clean end of stream, FrameError for a
    bad frame."""
    (n,) = struct.unpack(">I", _read_exact(f, 4, False))
    if n > MAX_HEADER:
        raise FrameError(f"header of {n} bytes is over {MAX_HEADER}")
    raw = _read_exact(f, n, True)
    try:
        header = json.loads(raw.decode())
    except (UnicodeDecodeError, ValueError):
        header = None
    if not isinstance(header, dict) or not isinstance(header.get("op"), str) or not header["op"]:
        raise FrameError(f"frame header is not a JSON object with an op: {raw[:80]!r}")
    (p,) = struct.unpack(">Q", _read_exact(f, 8, True))
    if p > max_payload:
        raise FrameError(f"{header['op']!r} payload of {p} bytes, limit {max_payload}")
    if pool is not None and p >= max(pool.min_size, 1):
        return header, _read_into(f, pool.take(p), p)
    payload = _read_exact(f, p, True) if p else b""
    return header, payload


def error(code: str, message: str, **extra) -> dict:
    return {"op": "error", "code": code, "message": message, **extra}


def accept_hello(conn: "Conn", roles, who: str, check=None) -> dict | None:
    """The server side of the handshake (docs/serving-protocol.md): reads the hello that must
    open conn and answers it. A hello of another version is answered with error version and
    None is returned (the caller ends the connection); a hello of a role not in roles (or one
    check, called with the hello, raises on) raises FrameError. Otherwise conn.role and
    conn.hello are set, hello_ok is sent and the hello returned. who names this side in the
    version error."""
    h, _ = conn.recv()
    if h["op"] != "hello":
        raise FrameError(f"the connection must start with hello, got {h['op']!r}")
    if h.get("version") != VERSION:
        conn.send(error("version", f"version {h.get('version')!r} unsupported; this {who} speaks {VERSION}"))
        return None
    if h.get("role") not in roles:
        raise FrameError(f"role {h.get('role')!r} is not one of {', '.join(roles)}")
    if check is not None:
        check(h)
    conn.role, conn.hello = h["role"], h
    conn.send({"op": "hello_ok", "version": VERSION})
    return h


@contextlib.contextmanager
def answering(conn: "Conn"):
    """Serves a connection's frames inside: a FrameError raised there is answered with its error
    frame (where the peer still listens); the peer going away ends it quietly."""
    try:
        yield
    except FrameError as e:
        try:
            conn.send(error(e.code, str(e)))
        except (OSError, Closed):
            pass
    except (OSError, Closed):
        pass


class Conn:
    """A framed connection: reads from one thread, writes from any (serialised by a lock)."""

    def __init__(self, sock: socket.socket, max_payload: int = DEFAULT_MAX_PAYLOAD):
        self.sock = sock
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        self.rf = sock.makefile("rb", buffering=1 << 16)
        self.max_payload = max_payload
        self.lock = threading.Lock()
        self.closed = False
        self.role = None
        self.hello = None

    @classmethod
    def connect(cls, addr: str, timeout: float | None = 10.0, **kw) -> "Conn":
        if addr.startswith("unix:"):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(timeout)
            s.connect(addr[5:])
        else:
            host, port = split_addr(addr)
            s = socket.create_connection((host, port), timeout=timeout)
        s.settimeout(None)
        return cls(s, **kw)

    def send(self, header: dict, payload=b"") -> None:
        data = encode(header, b"")[:-8]  # header part; the payload length and payload follow
        mv = memoryview(payload).cast("B") if not isinstance(payload, (bytes, bytearray)) else payload
        with self.lock:
            if self.closed:
                raise Closed("connection closed")
            self.sock.sendall(data + struct.pack(">Q", len(mv)))
            if len(mv):
                self.sock.sendall(mv)

    def recv(self, pool: PayloadPool | None = None):
        """The next frame (see read: with a pool, large payloads come in its buffers)."""
        return read(self.rf, self.max_payload, pool)

    def handshake(self, role: str, deployment: str = "default", stage: int = 0) -> dict:
        self.send({"op": "hello", "role": role, "deployment": deployment, "stage": stage, "version": VERSION,
                   "process": PROCESS})
        h, _ = self.recv()
        if h.get("op") != "hello_ok":
            raise FrameError(f"hello refused: {h}", h.get("code", "bad_request"))
        return h

    def close(self) -> None:
        with self.lock:
            self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def split_addr(addr: str):
    host, _, port = addr.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


# Tensors in payloads.
_DTYPES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}


def dtype_name(dtype) -> str:
    import torch
    return {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}[dtype]


def torch_dtype(name: str):
    import torch
    if name not in _DTYPES:
        raise FrameError(f"unknown dtype {name!r}")
    return getattr(torch, _DTYPES[name])


def tensor_bytes(t) -> memoryview:
    """The raw little-endian bytes of a CPU tensor (bf16 as its 16-bit pattern), no copy when contiguous."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    return memoryview(t.view(-1).view(__import__("torch").uint8).numpy()).cast("B")


def tensor_from(payload, dtype: str, shape) -> "torch.Tensor":
    import torch
    dt = torch_dtype(dtype)
    n = 1
    for s in shape:
        n *= int(s)
    if n * torch.tensor([], dtype=dt).element_size() != len(payload):
        raise FrameError(f"payload of {len(payload)} bytes does not hold {dtype}{list(shape)}")
    if n == 0:
        return torch.empty(shape, dtype=dt)
    with warnings.catch_warnings():  # read-only bytes: the tensor is only read (or copied) by its users
        warnings.simplefilter("ignore")
        return torch.frombuffer(payload, dtype=dt).view(*shape)
