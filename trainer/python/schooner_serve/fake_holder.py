"""TEST DOUBLE — an in-process Python stand-in for the KV-cache holder (the real one is Go, package
kvcache, run by the node agent as `schooner kvcache serve`). It answers exactly as the Go holder
does (docs/serving-protocol.md §3, "Details both sides rely on"), so the worker's tests hold against
either; tests/test_serve.py runs them against the Go holder too when SCHOONER_BIN names a built
`schooner` binary. Not for production: everything is in Python memory.

What it mirrors: replicas keyed by (deployment, stage, request); a request's puts carry each layer's
tokens in order from 0 and the put marked "last" (with "layers" and optionally "step") completes it —
until then its acked step is -1 and a get returns no chunk; every put gets one ack whose step is the
acked step after it (with "layer" and "tokens"); a put_step entry (its own "step", else the frame's)
is stored only as acked step + 1 at the next position, a step already held is acked again; `full`
(byte budget, never evicting) and `conflict` refuse one request and keep the connection, every other
error closes it; drop / drop_deployment answer `dropped`; get sends chunks of at most 100 tokens of
every local layer, then `end` with the acked step; list answers `held`; a get with `wait_ms` is held
while the prompt is incomplete and a writer of the stage from another process (hello's `process`)
sent a frame within the last 250 ms (the Go holder counts any bytes, so a frame still arriving), at most `wait_ms`;
with `expect` it is held until the prompt completes whether or not anyone sends (disaggregation);
a get with `from_step` f > 0 sends only the positions from prompt + f - 1 on and its end repeats
`from_step` (a replacement that preloaded the replica fetches the delta at the switch).
"""

from __future__ import annotations

import socket
import threading
import time

import torch

from . import frame

CHUNK_TOKENS = 100
WRITER_IDLE_S = 0.25
_ELEM = {"bf16": 2, "f16": 2, "f32": 4}


class _Refused(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class _Replica:
    def __init__(self, layout):
        self.layout = layout            # (dtype, kv_heads, head_dim)
        self.prompt: dict[int, list] = {}  # layer -> [(t0, t1, tensor [2, kvh, T, hd])]
        self.complete = False
        self.lo = self.hi = 0
        self.acked = -1
        self.prompt_tokens = 0
        self.steps = []                 # tensors [layers, 2, kvh, hd], steps acked-len+1 .. acked
        self.bytes = 0

    def layer_end(self, l):
        ps = self.prompt.get(l)
        return ps[-1][1] if ps else 0

    def next_token(self):
        return self.prompt_tokens + len(self.steps)


class FakeHolder:
    def __init__(self, listen: str = "127.0.0.1:0", budget: int = 1 << 34, delay_s: float = 0.0,
                 honour_from_step: bool = True):
        host, port = frame.split_addr(listen)
        self.srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind((host, port))
        self.srv.listen(64)
        self.addr = f"{host}:{self.srv.getsockname()[1]}"
        self.budget, self.delay_s = budget, delay_s
        # False plays a holder that predates `from_step`: it sends the whole replica and does
        # not repeat the field (what a reader must cope with).
        self.honour_from_step = honour_from_step
        self.sent_bytes = 0  # chunk payload bytes sent by gets: what a delta fetch saves
        self.get_delay_s = 0.0  # > 0: every get is answered this late (a holder that hangs)
        self.used = 0
        self.replicas: dict[tuple, _Replica] = {}
        self.lock = threading.Lock()
        self.frames = 0
        self.gets = 0
        self.get_waits = 0
        self.writers: dict = {}  # id(conn) -> [deployment, stage, process, last frame time]
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self._stop = True
        try:
            self.srv.close()
        except OSError:
            pass

    def acked_step(self, request: str, stage: int = 0, deployment: str = "default") -> int:
        with self.lock:
            r = self.replicas.get((deployment, stage, request))
            return r.acked if r else -1

    def _accept(self):
        while not self._stop:
            try:
                s, _ = self.srv.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(frame.Conn(s, max_payload=256 << 20),), daemon=True).start()

    def _serve(self, conn: frame.Conn):
        with frame.answering(conn):
            h = frame.accept_hello(conn, ("writer", "reader"), "holder", check=self._check_hello)
            if h is None:
                return
            dep, stage = h["deployment"], h["stage"]
            me = [dep, stage, h.get("process", ""), time.monotonic()]
            if h["role"] == "writer":
                with self.lock:
                    self.writers[id(conn)] = me
            try:
                while True:
                    h, p = conn.recv()
                    me[3] = time.monotonic()
                    self.frames += 1
                    self._handle(conn, dep, stage, h, p)
            finally:
                with self.lock:
                    self.writers.pop(id(conn), None)
        conn.close()

    @staticmethod
    def _check_hello(h):
        dep, stage = h.get("deployment"), h.get("stage")
        if not isinstance(dep, str) or not dep or not isinstance(stage, int) or stage < 0:
            raise frame.FrameError("hello needs a deployment and a stage >= 0")

    # --- one frame ------------------------------------------------------------------------

    def _handle(self, conn, dep, stage, h, p):
        op = h["op"]
        if op == "put":
            self._put(conn, dep, stage, h, p)
        elif op == "put_step":
            self._put_step(conn, dep, stage, h, p)
        elif op in ("drop", "get", "drop_deployment", "list"):
            if p:
                raise frame.FrameError(f"{op}: takes no payload")
            rid = h.get("request")
            if op in ("drop", "get") and not rid:
                raise frame.FrameError(f"{op}: no request")
            if op == "drop":
                with self.lock:
                    r = self.replicas.pop((dep, stage, rid), None)
                    if r:
                        self.used -= r.bytes
                conn.send({"op": "dropped", "request": rid, "requests": 1 if r else 0, "bytes": r.bytes if r else 0})
            elif op == "drop_deployment":
                with self.lock:
                    gone = [k for k in self.replicas if k[0] == dep]
                    n, b = len(gone), 0
                    for k in gone:
                        b += self.replicas.pop(k).bytes
                    self.used -= b
                conn.send({"op": "dropped", "deployment": dep, "requests": n, "bytes": b})
            elif op == "get":
                self.gets += 1
                self._await(conn, dep, stage, rid, int(h.get("wait_ms") or 0), int(h.get("want_step") or 0),
                            bool(h.get("expect")))
                self._get(conn, dep, stage, rid, int(h.get("from_step") or 0) if self.honour_from_step else 0)
            else:
                with self.lock:
                    held = sorted(({"request": k[2], "acked_step": r.acked, "bytes": r.bytes}
                                   for k, r in self.replicas.items() if k[0] == dep and k[1] == stage),
                                  key=lambda x: x["request"])
                conn.send({"op": "held", "requests": held})
        else:
            raise frame.FrameError(f"{op}: unknown op (a holder speaks put, put_step, drop, drop_deployment, get and list)")

    def _put(self, conn, dep, stage, h, p):
        rid, layer, tokens, dtype, shape = h.get("request"), h.get("layer"), h.get("tokens"), h.get("dtype"), h.get("shape")
        if not rid:
            raise frame.FrameError("put: no request")
        if h.get("kind") != "prompt":
            raise frame.FrameError(f"put: kind {h.get('kind')!r} is not 'prompt'")
        if not isinstance(layer, int) or layer < 0 or not isinstance(tokens, list) or len(tokens) != 2 or \
                not 0 <= tokens[0] <= tokens[1]:
            raise frame.FrameError(f"put: layer {layer}, tokens {tokens}: want layer >= 0 and tokens [t0,t1) with 0 <= t0 <= t1")
        if dtype not in _ELEM:
            raise frame.FrameError(f"put: dtype {dtype!r} is not bf16, f16 or f32")
        t0, t1 = tokens
        if not isinstance(shape, list) or len(shape) != 4 or shape[0] != 2 or shape[1] <= 0 or shape[2] != t1 - t0 or shape[3] <= 0:
            raise frame.FrameError(f"put: shape {shape} is not [2, kv_heads, {t1 - t0}, head_dim]")
        last = bool(h.get("last"))
        layers, step = h.get("layers"), h.get("step")
        if last and (not isinstance(layers, list) or len(layers) != 2 or not 0 <= layers[0] < layers[1]):
            raise frame.FrameError("put: a last put needs layers [l0,l1) with 0 <= l0 < l1")
        if last and step is not None and step < 0:
            raise frame.FrameError(f"put: step {step} is negative")
        kv = frame.tensor_from(p, dtype, shape)
        layout = (dtype, shape[1], shape[3])
        k = (dep, stage, rid)
        try:
            with self.lock:
                r = self.replicas.get(k)
                fresh = r is None
                if fresh:
                    r = _Replica(layout)
                acked = r.acked
                if r.layout != layout:
                    raise _Refused("conflict", f"request {rid} holds {r.layout}, not {layout}")
                if r.complete:
                    raise _Refused("conflict", f"the cache of request {rid} is complete at step {r.acked}: "
                                               "send put_step, or drop it first")
                if r.layer_end(layer) != t0:
                    raise _Refused("conflict", f"layer {layer} of request {rid} holds tokens [0,{r.layer_end(layer)}): "
                                               f"tokens [{t0},{t1}) do not follow")
                if last:
                    lo, hi = layers
                    if not lo <= layer < hi:
                        raise _Refused("conflict", f"the last put of request {rid} is of layer {layer}, outside [{lo},{hi})")
                    for l in range(lo, hi):
                        if l != layer and r.layer_end(l) != t1:
                            raise _Refused("conflict", f"request {rid} is not complete: layer {l} holds tokens "
                                                       f"[0,{r.layer_end(l)}), want [0,{t1})")
                    for l, ps in r.prompt.items():
                        if not lo <= l < hi and ps:
                            raise _Refused("conflict", f"request {rid} holds layer {l}, outside [{lo},{hi})")
                if self.used + len(p) > self.budget:
                    raise _Refused("full", f"storing {len(p)} bytes of request {rid} would pass the budget "
                                           f"({self.used} of {self.budget} bytes held)")
                if fresh:
                    self.replicas[k] = r
                if t1 > t0:
                    r.prompt.setdefault(layer, []).append((t0, t1, kv))
                r.bytes += len(p)
                self.used += len(p)
                if last:
                    r.complete, r.lo, r.hi, r.acked, r.prompt_tokens = True, layers[0], layers[1], step or 0, t1
                acked = r.acked
        except _Refused as e:
            conn.send(frame.error(e.code, str(e), request=rid))
            return
        self._delay()
        conn.send({"op": "ack", "request": rid, "step": acked, "layer": layer, "tokens": [t0, t1]})

    def _put_step(self, conn, dep, stage, h, p):
        entries, layers, dtype, shape, fstep = h.get("entries"), h.get("layers"), h.get("dtype"), h.get("shape"), h.get("step")
        if not isinstance(fstep, int) or fstep < 0:
            raise frame.FrameError(f"put_step: step {fstep} is negative")
        if not entries:
            raise frame.FrameError("put_step: no entries")
        if not isinstance(layers, list) or len(layers) != 2 or not 0 <= layers[0] < layers[1]:
            raise frame.FrameError(f"put_step: layers {layers}: want [l0,l1) with 0 <= l0 < l1")
        if dtype not in _ELEM:
            raise frame.FrameError(f"put_step: dtype {dtype!r} is not bf16, f16 or f32")
        nl = layers[1] - layers[0]
        if not isinstance(shape, list) or len(shape) != 5 or shape[0] != len(entries) or shape[1] != nl or \
                shape[2] != 2 or shape[3] <= 0 or shape[4] <= 0:
            raise frame.FrameError(f"put_step: shape {shape} is not [{len(entries)} entries, {nl} layers, 2, kv_heads, head_dim]")
        for e in entries:
            if not e.get("request") or not isinstance(e.get("token"), int) or e["token"] < 0 or \
                    (e.get("step") is not None and e["step"] < 0):
                raise frame.FrameError(f"put_step: entry {e} needs a request, a token >= 0 and no negative step")
        kv = frame.tensor_from(p, dtype, shape)
        layout = (dtype, shape[3], shape[4])
        per = len(p) // len(entries)
        answers = []
        with self.lock:
            for i, e in enumerate(entries):
                rid, step = e["request"], e["step"] if e.get("step") is not None else fstep
                r = self.replicas.get((dep, stage, rid))
                err = None
                if r is None or not r.complete:
                    err = ("conflict", f"request {rid} has no complete cache here: put its prompt (the last put "
                                       f"marked last) before step {step}")
                elif r.layout != layout:
                    err = ("conflict", f"request {rid} holds {r.layout}, step {step} is {layout}")
                elif [r.lo, r.hi] != list(layers):
                    err = ("conflict", f"request {rid} holds layers [{r.lo},{r.hi}), step {step} carries {layers}")
                elif step <= r.acked:
                    pass  # a step sent again: held already
                elif step != r.acked + 1:
                    err = ("conflict", f"request {rid} is acked to step {r.acked}: step {step} does not follow")
                elif e["token"] != r.next_token():
                    err = ("conflict", f"request {rid} holds tokens [0,{r.next_token()}): step {step} is at token {e['token']}")
                elif self.used + per > self.budget:
                    err = ("full", f"storing step {step} of request {rid} ({per} bytes) would pass the budget "
                                   f"({self.used} of {self.budget} bytes held)")
                else:
                    r.steps.append(kv[i].clone())
                    r.acked = step
                    r.bytes += per
                    self.used += per
                answers.append((rid, step, err))
        for rid, step, err in answers:
            if err:
                conn.send(frame.error(err[0], err[1], request=rid, step=step))
            else:
                self._delay()
                conn.send({"op": "ack", "request": rid, "step": step})

    def _delay(self):
        if self.delay_s:
            time.sleep(self.delay_s)

    def _await(self, conn, dep, stage, rid, wait_ms, want, expect=False):
        """Holds a get that asked to wait while another process's writer of the stage still sends
        (with expect: whoever sends, the prompt is known to be on its way)."""
        if wait_ms <= 0:
            return
        mine = getattr(conn, "hello", {}).get("process", "")
        end = time.monotonic() + wait_ms / 1000
        waited = False
        while time.monotonic() < end:
            with self.lock:
                r = self.replicas.get((dep, stage, rid))
                if r is not None and r.complete and r.acked >= want:
                    break
                now = time.monotonic()
                sending = any(d == dep and s == stage and (not mine or p != mine) and now - t < WRITER_IDLE_S
                              for d, s, p, t in self.writers.values())
            if not sending and not expect:
                break
            waited = True
            time.sleep(0.002)
        self.get_waits += waited

    def _get(self, conn, dep, stage, rid, from_step=0):
        """Chunks in token order, then end; with from_step > 0 only the steps from it on (step k
        is position prompt + k - 1), no prompt, and the end repeats from_step."""
        if self.get_delay_s:
            time.sleep(self.get_delay_s)
        echo = {"from_step": from_step} if from_step > 0 else {}
        with self.lock:
            r = self.replicas.get((dep, stage, rid))
            if r is None or not r.complete:
                snap = None
            else:
                snap = (r.lo, r.hi, r.acked, r.prompt_tokens, {l: list(ps) for l, ps in r.prompt.items()},
                        list(r.steps), r.layout)
        if snap is None:
            conn.send({"op": "end", "request": rid, "acked_step": -1, **echo})
            return
        lo, hi, acked, ptoks, prompt, steps, (dtype, kvh, hd) = snap
        total = ptoks + len(steps)
        start = min(ptoks + from_step - 1, total) if from_step > 0 else 0
        tdtype = frame.torch_dtype(dtype)
        for a in range(start, total, CHUNK_TOKENS):
            b = min(a + CHUNK_TOKENS, total)
            buf = torch.zeros(hi - lo, 2, kvh, b - a, hd, dtype=tdtype)
            for li in range(hi - lo):
                for t0, t1, kv in prompt.get(lo + li, []):
                    f, t = max(a, t0), min(b, t1)
                    if f < t:
                        buf[li, :, :, f - a:t - a] = kv[:, :, f - t0:t - t0]
                for pos in range(max(a, ptoks), b):
                    buf[li, :, :, pos - a] = steps[pos - ptoks][li]
            data = frame.tensor_bytes(buf)
            self.sent_bytes += len(data)
            conn.send({"op": "chunk", "request": rid, "layers": [lo, hi], "tokens": [a, b], "dtype": dtype,
                       "shape": list(buf.shape)}, data)
        conn.send({"op": "end", "request": rid, "acked_step": acked, **echo})


def main():
    import argparse
    import time
    p = argparse.ArgumentParser(description="TEST DOUBLE of the Go KV-cache holder")
    p.add_argument("--listen", default="127.0.0.1:0")
    p.add_argument("--budget-gib", type=float, default=16)
    a = p.parse_args()
    h = FakeHolder(a.listen, int(a.budget_gib * (1 << 30)))
    print(f"fake holder on {h.addr}", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
