"""TEST DOUBLE — an in-process Python stand-in for the KV-cache holder (the real one is Go, package
kvcache, run by the node agent). It speaks the holder's side of docs/serving-protocol.md §3 well
enough for the worker's tests and bench_failover.py: put / put_step / drop / get / list, acks once
stored, `error full` over its byte budget. Not for production: everything is in Python memory.

Keys: (deployment, stage, request). put_step acks each entry with the entry's own "step" when it
has one (this worker sends it), else the frame's "step"; a prompt put acks with its "step" (0
unless the prompt was recomputed after a resume). `end.acked_step` is the highest acked step.
"""

from __future__ import annotations

import socket
import threading

import torch

from . import frame

CHUNK_TOKENS = 100


class _Replica:
    def __init__(self):
        self.records = []  # (l0, l1, t0, t1, tensor [layers, 2, kvh, tokens, hd])
        self.acked = -1
        self.bytes = 0


class FakeHolder:
    def __init__(self, listen: str = "127.0.0.1:0", budget: int = 1 << 34, delay_s: float = 0.0):
        host, port = frame.split_addr(listen)
        self.srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind((host, port))
        self.srv.listen(64)
        self.addr = f"{host}:{self.srv.getsockname()[1]}"
        self.budget, self.delay_s = budget, delay_s
        self.used = 0
        self.replicas: dict[tuple, _Replica] = {}
        self.lock = threading.Lock()
        self.frames = 0
        self.gets = 0
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
            threading.Thread(target=self._serve, args=(frame.Conn(s),), daemon=True).start()

    def _serve(self, conn: frame.Conn):
        try:
            h, _ = conn.recv()
            if h["op"] != "hello" or h.get("role") not in ("writer", "reader"):
                raise frame.FrameError("expected hello as writer or reader")
            if h.get("version") != frame.VERSION:
                conn.send(frame.error("version", "unsupported version"))
                return
            dep, stage = h.get("deployment", ""), int(h.get("stage", 0))
            conn.send({"op": "hello_ok", "version": frame.VERSION})
            while True:
                h, p = conn.recv()
                self.frames += 1
                op = h["op"]
                if op == "put":
                    kv = frame.tensor_from(p, h["dtype"], h["shape"])  # [2, kvh, T, hd]
                    t0, t1 = h["tokens"]
                    l = h["layer"]
                    if self._store(conn, dep, stage, h["request"], (l, l + 1, t0, t1, kv[None]), len(p)):
                        self._ack(conn, dep, stage, h["request"], int(h.get("step", 0)))
                elif op == "put_step":
                    kv = frame.tensor_from(p, h["dtype"], h["shape"])  # [n, L, 2, kvh, hd]
                    l0, l1 = h["layers"]
                    per = len(p) // max(1, len(h["entries"]))
                    for i, e in enumerate(h["entries"]):
                        rec = (l0, l1, e["token"], e["token"] + 1, kv[i][:, :, :, None, :])
                        if self._store(conn, dep, stage, e["request"], rec, per):
                            self._ack(conn, dep, stage, e["request"], int(e.get("step", h["step"])))
                elif op == "drop":
                    with self.lock:
                        r = self.replicas.pop((dep, stage, h["request"]), None)
                        if r:
                            self.used -= r.bytes
                elif op == "get":
                    self.gets += 1
                    self._get(conn, dep, stage, h["request"])
                elif op == "list":
                    with self.lock:
                        held = [{"request": k[2], "acked_step": r.acked, "bytes": r.bytes}
                                for k, r in self.replicas.items() if k[0] == dep and k[1] == stage]
                    conn.send({"op": "held", "requests": held})
                else:
                    raise frame.FrameError(f"unknown op {op!r}")
        except frame.FrameError as e:
            try:
                conn.send(frame.error("bad_request", str(e)))
            except (OSError, frame.Closed):
                pass
        except (OSError, frame.Closed):
            pass
        conn.close()

    def _store(self, conn, dep, stage, rid, rec, nbytes) -> bool:
        with self.lock:
            if self.used + nbytes > self.budget:
                full = True
            else:
                full = False
                r = self.replicas.setdefault((dep, stage, rid), _Replica())
                r.records.append(rec)
                r.bytes += nbytes
                self.used += nbytes
        if full:
            conn.send(frame.error("full", f"holder budget of {self.budget} bytes reached", request=rid))
        return not full

    def _ack(self, conn, dep, stage, rid, step):
        if self.delay_s:
            import time
            time.sleep(self.delay_s)
        with self.lock:
            r = self.replicas.get((dep, stage, rid))
            if r is not None:
                r.acked = max(r.acked, step)
        conn.send({"op": "ack", "request": rid, "step": step})

    def _get(self, conn, dep, stage, rid):
        with self.lock:
            r = self.replicas.get((dep, stage, rid))
            recs = list(r.records) if r else []
            acked = r.acked if r else -1
        if not recs:
            conn.send({"op": "end", "request": rid, "acked_step": acked})
            return
        l0 = min(x[0] for x in recs)
        l1 = max(x[1] for x in recs)
        tmax = max(x[3] for x in recs)
        sample = recs[0][4]
        _, _, kvh, _, hd = sample.shape
        buf = torch.zeros(l1 - l0, 2, kvh, tmax, hd, dtype=sample.dtype)
        have = torch.zeros(l1 - l0, tmax, dtype=torch.bool)
        for a, b, t0, t1, kv in recs:  # later records win (a recomputed prompt overwrites)
            buf[a - l0:b - l0, :, :, t0:t1] = kv
            have[a - l0:b - l0, t0:t1] = True
        full = have.all(0)
        n = int(full.long().cumprod(0).sum())  # contiguous positions from 0 held for every layer
        for t0 in range(0, n, CHUNK_TOKENS):
            t1 = min(n, t0 + CHUNK_TOKENS)
            part = buf[:, :, :, t0:t1].contiguous()
            conn.send({"op": "chunk", "request": rid, "layers": [l0, l1], "tokens": [t0, t1],
                       "dtype": frame.dtype_name(part.dtype), "shape": list(part.shape)}, frame.tensor_bytes(part))
        conn.send({"op": "end", "request": rid, "acked_step": acked})


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
