"""The inference worker: one process per pipeline stage, speaking docs/serving-protocol.md.

    python3 -m schooner_serve.worker --model tiny --seed 7 --stage 0 --depth 2 --layers 0:2 \
        --listen 127.0.0.1:7001 --next 127.0.0.1:7002 [--holder 127.0.0.1:7101] [--replicate on]

Threads: one reader per connection turns frames into events on one queue; the engine thread
takes them in order and does all compute and scheduling. The first stage schedules (continuous
batching, one step in flight through the pipeline: a prefill step for newly admitted requests or
a decode step of every running request), the last stage samples and emits token/done to the
router and `sampled` back to the first stage.

Each step follows the route the router gave with its submits (the stage addresses of the
pipeline it serves), not whatever successor each stage was last told: while a replacement takes
over, the router and the node agents learn of it at different moments, and a step must never go
through one pipeline and come back to another.
"""

from __future__ import annotations

import argparse
import collections
import faulthandler
import json
import os
import queue
import signal
import socket
import sys
import threading
import time
import uuid

import torch

from . import frame
from . import gcpause
from . import preload as preload_mod
from .config import add_model_args, config_from_args
from .decode_graphs import MIN_CONTEXT
from .engine import RestoreFailed, StageEngine
from .kvpool import PoolFull

ROLES = ("router", "stage", "sampler", "node")


_runs = iter(range(1, 1 << 62))


class Request:
    def __init__(self, rid, prompt, max_tokens, temperature, seed, stop, conn):
        self.id, self.prompt, self.max_tokens = rid, prompt, max_tokens
        self.temperature, self.seed, self.stop, self.conn = temperature, seed, stop, conn
        self.generated: list[int] = []
        self.resume_mode = None  # "restore" | "reprefill" for a resubmit after a failover
        self.replay: list[int] = []  # a restored request's `generated`: steps below len(replay) are known
        self.run = next(_runs)  # tells this submit's frames from those of a replaced one
        self.route: list[str] | None = None  # the stages its submit named
        self.started = False
        # Prompt–token disaggregation (router's disagg.go): a prompt pool's request (token 0
        # only) keeps its KV replica on the holder when it ends, for the token pool; a token
        # pool's restore waits for a prompt still on its way.
        self.handoff = False
        self.expect = False

    @property
    def reserve(self) -> int:
        return len(self.prompt) + self.max_tokens

    def params(self) -> dict:
        return {"temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens,
                "stop": self.stop, "reserve": self.reserve}


# SCHOONER_SERVE_TRACE=1: every step's parts timed on stderr (with a device sync after each,
# so the parts add up; off by default, as the syncs cost overlap).
TRACE = os.environ.get("SCHOONER_SERVE_TRACE") == "1"


class Worker:
    def __init__(self, a: argparse.Namespace):
        self.a = a
        self.cfg = config_from_args(a)
        first, end = (int(x) for x in a.layers.split(":")) if a.layers else (0, self.cfg.layers)
        device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.engine = StageEngine(self.cfg, a.seed, first, end, device=device,
                                  dtype=getattr(torch, a.dtype) if a.dtype else None,
                                  kv_blocks=a.kv_blocks, kv_mem=int(a.kv_mem_gib * (1 << 30)) if a.kv_mem_gib else None,
                                  block=a.block, holder=a.holder, replicate=a.replicate == "on",
                                  deployment=a.deployment, stage=a.stage, restore_wait_s=a.restore_wait,
                                  swap_host=int(a.swap_host_gib * (1 << 30)) or None)
        self.first, self.last = self.engine.is_first, self.engine.is_last
        self._capture_graphs()
        self._warm_prefill()
        # What start-up made lives as long as the process: out of the collector's full walks, so
        # no decode step stalls on one (gcpause.py).
        print(f"schooner_serve: {gcpause.freeze()} start-up objects frozen for the collector", file=sys.stderr, flush=True)
        if (a.stage == 0) != self.first or (a.stage == a.depth - 1) != self.last:
            raise SystemExit(f"stage {a.stage} of {a.depth} with layers {first}:{end} of {self.cfg.layers}: "
                             "the first stage must hold layer 0 and the last the final layer")
        self.inbox: queue.Queue = queue.Queue()
        self.stopping = threading.Event()  # SIGTERM: the engine takes no further step
        self.routers: list[frame.Conn] = []  # router connections, latest last
        self.pending_out: list[dict] = []    # token/done frames waiting for a router connection
        self.links: dict[str, frame.Conn] = {}  # connections to other stages, by address
        self.payloads = frame.PayloadPool()  # receive buffers of the forwards from other stages
        # first stage
        self.route: list[str] | None = None  # the stage addresses of the router's latest submit
        self.requests: dict[str, Request] = {}
        self.waiting: collections.deque = collections.deque()
        self.running: list[str] = []
        self.restoring: set = set()  # resubmits whose KV restore is in flight through the stages
        # The steps in flight (at most --inflight), by number: their requests, where each went
        # and when (a step that does not come back within --step-timeout breaks the pipeline).
        # `origin` tells this process's steps from those of a first stage it replaced.
        self.steps: dict[int, dict] = {}
        self.origin = uuid.uuid4().hex[:12]
        self.seq = 0
        self.stalled = False  # the last step() found nothing it could send: wait for an event
        # Requests set aside with their KV kept, each until a deadline: a resubmit takes it up,
        # else it is freed on every stage (its router is gone for good).
        self.orphans: dict[str, float] = {}
        # last stage
        self.emitted: dict[str, int] = {}
        self.done_sent: set = set()
        self.tokens_out = 0
        self.lock = threading.Lock()

    # --- connections ------------------------------------------------------------------------

    def _capture_graphs(self) -> None:
        """On a GPU, capture the decode graphs before listening: every batch bucket up to
        --max-batch at every context bucket up to --capture-context (default the model's max_seq,
        within the KV pool), so a replacement's first steps after a failover replay, not capture.
        A capture that fails leaves the rest to be captured on first use."""
        g = self.engine.graphs
        if g is None or self.a.capture_context == 0:
            return
        pool = self.engine.pool
        top = min(self.a.capture_context or self.cfg.max_seq, pool.num_blocks * pool.block)
        batches = [b for b in (1 << i for i in range(16)) if b < self.a.max_batch] + [self.a.max_batch]
        contexts = [c for c in (MIN_CONTEXT << i for i in range(16)) if c < top] + [top]
        t = time.perf_counter()
        try:
            g.prepare(batches, contexts)
        except Exception as e:  # noqa: BLE001 — eager capture is an optimisation, not a must
            print(f"schooner_serve: capturing decode graphs: {e}; the rest on first use", file=sys.stderr, flush=True)
        print(f"schooner_serve: {g.captures} decode graphs captured in {time.perf_counter() - t:.1f} s",
              file=sys.stderr, flush=True)

    def _warm_prefill(self) -> None:
        """On a GPU, one throwaway prefill of --warmup-tokens positions before listening (not
        replicated): a fresh process's first prefill loads its kernels and grows the allocator's
        pools, seconds that would otherwise fall on the first request a replacement or standby
        recomputes (production engines warm up the same way)."""
        n = self.a.warmup_tokens
        if n is None:
            n = 0 if self.engine.device.type != "cuda" else self.a.max_prefill_tokens
        pool = self.engine.pool
        n = min(n, pool.num_blocks * pool.block - 1, self.cfg.max_seq)
        if n <= 0:
            return
        e, rid = self.engine, "schooner-warmup-" + uuid.uuid4().hex[:8]
        writer, e.writer = e.writer, None
        t = time.perf_counter()
        try:
            e.begin(rid, n, {"temperature": 0.0, "seed": 0, "max_tokens": 1, "stop": [], "reserve": n})
            ent = [{"request": rid, "step": 0, "positions": [0, n]}]
            x = [1] * n if e.is_first else torch.zeros(n, self.cfg.hidden, device=e.device, dtype=e.dtype)
            y = e.forward("prefill", ent, x)
            if e.is_last:
                e.sample(ent, y)
            if e.device.type == "cuda":
                torch.cuda.synchronize(e.device)
        except Exception as ex:  # noqa: BLE001 — a warm-up is an optimisation, not a must
            print(f"schooner_serve: warm-up prefill of {n} positions: {ex}", file=sys.stderr, flush=True)
        else:
            print(f"schooner_serve: warm-up prefill of {n} positions in {time.perf_counter() - t:.2f} s",
                  file=sys.stderr, flush=True)
        finally:
            e.release(rid)  # the writer is off: nothing is dropped at the holder
            e.writer = writer

    def on_sigterm(self, *_) -> None:
        """Stopped (a handover after a notice, a scale-down, the deployment's stop): what the
        replication writer has queued still goes to the holder before the process exits, so a
        replacement restoring from it finds every prompt this stage computed (a restore's get
        waits for a writer still sending, docs/serving-protocol.md section 3). In a thread: the
        handler may have interrupted the main thread inside the writer's queue lock."""
        self.stopping.set()
        threading.Thread(target=self._drain_and_exit, name="sigterm", daemon=True).start()

    def _drain_and_exit(self) -> None:
        w, t0 = self.engine.writer, time.monotonic()
        ok = True
        if w is not None and self.a.term_flush > 0:
            done = threading.Event()
            threading.Thread(target=lambda: (w.flush(self.a.term_flush), done.set()), daemon=True).start()
            ok = done.wait(self.a.term_flush)
        stats = w.stats() if w is not None else {}
        print(f"schooner_serve: SIGTERM: replication {'flushed' if ok else 'not flushed in time'} in "
              f"{time.monotonic() - t0:.3f} s ({stats}); exiting", file=sys.stderr, flush=True)
        os._exit(0)

    def preload(self) -> dict:
        """With --preload S (a standby migrating off a noticed machine), fetch every replica of
        this stage the holder keeps, for at most S seconds, before listening: the node agent
        reports the stage ready (and the deployment switches to it) once it listens, so the
        switch finds the caches here and fetches only the steps decoded since (preload.py)."""
        if self.a.preload <= 0 or not self.a.holder:
            return {}
        if self.engine.swap is not None:
            # preload.py places replicas into GPU pages directly; a swapping stage restores them
            # at the switch instead (each swapped in, placed, swapped out as any request).
            print("schooner_serve: --preload is not done with --swap-host-gib: the switch restores instead",
                  file=sys.stderr, flush=True)
            return {}
        return preload_mod.preload(self.engine, self.a.preload, ttl_s=self.a.orphan_ttl,
                                   log=lambda m: print(m, file=sys.stderr, flush=True))

    def serve(self) -> None:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self.on_sigterm)
        self.preload()
        host, port = frame.split_addr(self.a.listen)
        srv = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((host, port))
        srv.listen(64)
        self.port = srv.getsockname()[1]
        print(f"schooner_serve: stage {self.a.stage}/{self.a.depth} layers {self.engine.first}:{self.engine.end} "
              f"of {self.cfg.name} on {self.engine.device} ({self.engine.dtype}), {self.engine.pool.num_blocks} KV "
              f"blocks of {self.engine.pool.block}, listening on {host}:{self.port}", file=sys.stderr, flush=True)
        threading.Thread(target=self._accept, args=(srv,), daemon=True).start()
        self.run_engine()

    def _accept(self, srv) -> None:
        while True:
            s, _ = srv.accept()
            threading.Thread(target=self._read, args=(frame.Conn(s, max_payload=self.a.max_payload),),
                             daemon=True).start()

    def _read(self, conn: frame.Conn) -> None:
        with frame.answering(conn):
            if frame.accept_hello(conn, ROLES, "worker") is None:
                conn.close()
                return
            if conn.role == "router":
                self.inbox.put(("router", conn, None, None))
            allowed = {"router": ("submit", "cancel", "ping"), "stage": ("forward", "release"),
                       "sampler": ("sampled", "release"), "node": ("ping", "peers")}[conn.role]
            # A stage's forwards carry hidden states: read into reused buffers (handle gives
            # each back once the step is done with it).
            pool = self.payloads if conn.role == "stage" else None
            while True:
                h, p = conn.recv(pool)
                if h["op"] not in allowed:
                    raise frame.FrameError(f"unknown op {h['op']!r} on a {conn.role} connection")
                if h["op"] == "ping":
                    conn.send({"op": "pong", "load": self.load()})
                    continue
                if h["op"] == "peers":
                    self.on_peers(conn, h)
                    continue
                self.inbox.put((h["op"], conn, h, p))
        conn.close()
        self.inbox.put(("closed", conn, None, None))

    def on_peers(self, conn: frame.Conn, h: dict) -> None:
        """The node agent's news of this stage's successor (docs/serving-protocol.md, section
        2): a new next stage applies at once to frames without a route (steps follow their route); a
        new holder is taken over by the engine thread, which re-sends every local
        cache there before the next step's replica. Answered with peers_ok once applied."""
        nxt = h.get("next")
        if nxt and nxt != self.a.next:
            with self.lock:
                self.a.next = nxt
        holder = h.get("holder")
        if holder and holder != self.engine.holder:
            self.inbox.put(("peers_holder", conn, h, None))
            return
        conn.send({"op": "peers_ok"})

    def load(self) -> dict:
        if self.first:
            return {"running": len(self.running), "waiting": len(self.waiting),
                    "kv_blocks_free": self.engine.pool.num_free}
        held = self.engine.swap.requests() if self.engine.swap is not None else self.engine.pool.tables
        return {"running": len(held), "waiting": 0, "kv_blocks_free": self.engine.pool.num_free}

    def hop(self, route) -> str:
        """Where this stage's frames for a step go: the stage after this one on the step's route
        (from the last stage, the first), else the successor the node agent gave (--next/peers)."""
        if isinstance(route, list) and len(route) == self.a.depth and all(isinstance(x, str) and x for x in route):
            return route[(self.a.stage + 1) % self.a.depth]
        return self._configured_next()

    def _configured_next(self) -> str:
        end = time.monotonic() + self.a.connect_timeout
        while not self.a.next:  # a stage started before its successor: the node sends peers
            if time.monotonic() > end:
                raise frame.Closed("no next stage yet: the node agent has not sent peers")
            time.sleep(0.05)
        return self.a.next

    def send_next(self, h: dict, payload=b"", route=None) -> str:
        """To the next stage of the route (role stage), or from the last stage to the first (role
        sampler); connects on first use. Returns the address. The successor the node agent gave
        may still be starting: that connection is retried for --connect-timeout. A route names
        stages the router found ready: one attempt, so that a stage gone since never holds up
        the engine thread (the step is then lost and handled as a broken pipeline)."""
        addr = self.hop(route)
        patient = route is None
        if route is not None:
            h = {**h, "route": route}
        for attempt in range(2):
            c = self.links.get(addr)
            if c is None or c.closed:
                c = self.links[addr] = self._connect(addr, patient)
            try:
                c.send(h, payload)
                return addr
            except (OSError, frame.Closed):
                c.close()
                self.links.pop(addr, None)
        raise frame.Closed(f"cannot reach {addr}")

    def _connect(self, addr: str, patient: bool) -> frame.Conn:
        end = time.monotonic() + (self.a.connect_timeout if patient else 0)
        while True:
            try:
                c = frame.Conn.connect(addr, timeout=10.0 if patient else 2.0, max_payload=self.a.max_payload)
                c.handshake("sampler" if self.last else "stage", self.a.deployment, self.a.stage)
                # The peer sends nothing on this connection but errors: print them, and report
                # the connection's end to the engine thread.
                threading.Thread(target=self._drain, args=(c, addr), daemon=True).start()
                return c
            except (OSError, frame.Closed, frame.FrameError):
                if time.monotonic() > end:
                    raise
                time.sleep(0.05)

    def _drain(self, c: frame.Conn, addr: str) -> None:
        try:
            while True:
                h, _ = c.recv()
                print(f"schooner_serve: {addr} says {h}", file=sys.stderr, flush=True)
        except (OSError, frame.Closed, frame.FrameError):
            c.close()
        self.inbox.put(("next_closed", c, addr, None))

    def to_router(self, h: dict, conn: frame.Conn | None = None) -> None:
        """token/done/error frames for the router: on the submitting connection when this process
        took the submit (one stage), else on the latest router connection; kept until one comes."""
        targets = [conn] if conn is not None and not conn.closed else [c for c in reversed(self.routers) if not c.closed][:1]
        for c in targets:
            try:
                c.send(h)
                return
            except (OSError, frame.Closed):
                pass
        self.pending_out.append(h)

    # --- the engine thread ------------------------------------------------------------------

    def run_engine(self) -> None:
        while True:
            if self.stopping.is_set():
                # SIGTERM: no more steps (they would queue more to replicate); the drain
                # thread exits the process once the writer has sent what it has.
                threading.Event().wait()
            idle = len(self.steps) >= self.a.inflight or not (self.waiting or self.running) or not self.first \
                or self.stalled
            wait = None if idle else 0
            deadlines = list(self.orphans.values())
            if self.engine.preloaded:
                deadlines.append(preload_mod.next_expiry(self.engine))
            if self.steps and self.a.step_timeout > 0:
                deadlines.append(self._oldest()["since"] + self.a.step_timeout)
            if deadlines and wait is None:
                wait = max(0.0, min(deadlines) - time.monotonic())
            try:
                ev = self.inbox.get(timeout=wait)
            except queue.Empty:
                ev = None
            if self.steps and self.a.step_timeout > 0 and \
                    time.monotonic() >= self._oldest()["since"] + self.a.step_timeout:
                old = self._oldest()
                self._pipeline_lost(f"step {old['seq']} sent to {old['to']} did not come back "
                                    f"within {self.a.step_timeout:g} s")
            if self.orphans:
                self._free_orphans()
            if self.engine.preloaded:
                preload_mod.expire(self.engine)
            while ev is not None:
                self.stalled = False
                self.handle(*ev)
                try:
                    ev = self.inbox.get_nowait()
                except queue.Empty:
                    ev = None
            if self.first and len(self.steps) < self.a.inflight:
                self.stalled = not self.step()

    def _oldest(self) -> dict:
        return self.steps[min(self.steps)]

    def handle(self, op, conn, h, payload) -> None:
        if op == "router":
            self.routers.append(conn)
            out, self.pending_out = self.pending_out, []
            for m in out:
                self.to_router(m)
        elif op == "closed":
            if conn in self.routers:
                self.routers.remove(conn)
                if self.first:
                    self._router_gone(conn)
        elif op == "next_closed":
            addr = h
            if self.links.get(addr) is conn:
                del self.links[addr]
                if self.first and self.a.depth > 1 and any(st["to"] == addr for st in self.steps.values()):
                    self._pipeline_lost(f"the connection to {addr} closed with a step in flight")
        elif op == "peers_holder":
            self.engine.set_holder(h["holder"])
            try:
                conn.send({"op": "peers_ok"})
            except (OSError, frame.Closed):
                pass
        elif op == "submit":
            self.on_submit(conn, h)
        elif op == "cancel":
            self.on_cancel(conn, h)
        elif op == "sampled":
            self.on_sampled(h)
        elif op == "forward":
            try:
                self.on_forward(h, payload)
            finally:
                self.payloads.give(payload)
        elif op == "release":
            self.on_release(h)

    # first stage --------------------------------------------------------------------------

    def on_submit(self, conn, h) -> None:
        rid = h.get("request")
        try:
            if not self.first:
                raise ValueError(f"stage {self.a.stage} is not the first stage: submit to stage 0")
            if not isinstance(rid, str) or not rid:
                raise ValueError("request must be a non-empty string")
            prompt = h.get("prompt")
            if not isinstance(prompt, list) or not prompt or not all(
                    isinstance(t, int) and 0 <= t < self.cfg.vocab for t in prompt):
                raise ValueError(f"prompt must be a non-empty list of token ids below {self.cfg.vocab}")
            n = h.get("max_tokens")
            if not isinstance(n, int) or n < 1:
                raise ValueError("max_tokens must be a positive integer")
            temp = float(h.get("temperature", 0) or 0)
            seed = int(h.get("seed", 0) or 0)
            if temp < 0:
                raise ValueError("temperature must be >= 0")
            stop = h.get("stop", [self.cfg.eos] if self.cfg.eos is not None else [])
            if not isinstance(stop, list) or not all(isinstance(t, int) for t in stop):
                raise ValueError("stop must be a list of token ids")
            k = int(h.get("resume_from", 0) or 0)
            gen = h.get("generated", []) or []
            if k < 0 or k >= n or len(gen) != k or not all(isinstance(t, int) and 0 <= t < self.cfg.vocab for t in gen):
                raise ValueError("resume_from must be in [0, max_tokens) and generated must hold that many tokens")
            mode = h.get("resume_mode") or self.a.resume_mode
            if mode not in ("auto", "restore", "reprefill"):
                raise ValueError("resume_mode must be restore or reprefill")
            handoff, expect = h.get("handoff", False), h.get("expect", False)
            if not isinstance(handoff, bool) or not isinstance(expect, bool):
                raise ValueError("handoff and expect must be booleans")
            if handoff and (n != 1 or k != 0):
                raise ValueError("a handoff request is a new request for token 0 alone (max_tokens 1)")
            if handoff and not self.a.holder:
                raise ValueError("a handoff request leaves its KV cache on the holder: this worker has none (--holder)")
            if expect and k == 0:
                raise ValueError("expect goes with a request resumed from a handed-off prompt (resume_from > 0)")
            route = h.get("route")
            if route is not None and (not isinstance(route, list) or len(route) != self.a.depth or
                                      not all(isinstance(x, str) and x for x in route)):
                raise ValueError(f"route must list the {self.a.depth} stage addresses of the pipeline")
        except (TypeError, ValueError) as e:
            conn.send(frame.error("bad_request", str(e), request=rid))
            return
        if route is not None and self.route is not None and route != self.route:
            self._route_changed(route)
        if route is not None:
            self.route = route
        old = self.requests.get(rid)
        r = Request(rid, prompt, n, temp, seed, stop, conn)
        r.route = route
        r.handoff, r.expect = handoff, expect
        if r.reserve > self.engine.pool.num_blocks * self.engine.pool.block:
            conn.send(frame.error("bad_request", f"prompt + max_tokens = {r.reserve} positions is more than the "
                                  f"KV pool's {self.engine.pool.num_blocks * self.engine.pool.block}", request=rid))
            return
        if len(self.waiting) >= self.a.max_waiting:
            conn.send(frame.error("overloaded", f"{len(self.waiting)} requests waiting", request=rid))
            return
        if k > 0:
            r.generated = list(gen)
            r.replay = list(gen)
            if mode == "auto":
                mode = "restore" if (self.a.holder or self.engine.holds(rid) or self.a.depth > 1) else "reprefill"
            r.resume_mode = mode
        if old is not None or self.engine.holds(rid):  # a resubmit replaces the old run
            self._forget(rid, keep_kv=r.resume_mode == "restore")
        self.requests[rid] = r
        self.orphans.pop(rid, None)
        self.waiting.append(rid)
        conn.send({"op": "accepted", "request": rid})

    def _forget(self, rid, keep_kv=False, keep_replica=False) -> None:
        self.requests.pop(rid, None)
        self.restoring.discard(rid)
        if rid in self.waiting:
            self.waiting.remove(rid)
        if rid in self.running:
            self.running.remove(rid)
        if not keep_kv:
            self.engine.release(rid, keep_replica=keep_replica)

    def on_cancel(self, conn, h) -> None:
        rid = h.get("request")
        r = self.requests.get(rid)
        if r is None:
            return
        self.finish(r, "cancelled")

    def finish(self, r: Request, reason: str) -> None:
        """The first stage ends a request: frees it here and tells the stages behind."""
        if not self._release(r, reason, steps=len(r.generated)) and reason == "cancelled":
            self.emit_done(r.id, "cancelled", len(r.generated), r.conn)

    def _release(self, r: Request, reason: str, keep_replica: bool = False, **extra) -> bool:
        """Frees r here and sends release (with extra) to the stages behind, if any: False where
        there are none. keep_replica leaves its KV replica on the holders (a handed-off prompt)."""
        self._forget(r.id, keep_replica=keep_replica)
        if self.a.depth <= 1:
            return False
        if keep_replica:
            extra["keep_replica"] = True
        try:
            self.send_next({"op": "release", "request": r.id, "reason": reason, **extra}, route=self.route)
        except (OSError, frame.Closed):
            pass
        return True

    def step(self) -> bool:
        """Schedule one step: the restore of resubmitted requests (each stage makes its KV present
        and says how much of it it has), else a prefill of newly admitted requests, else a decode
        of the running requests not in a step in flight (at most --max-batch). False when there
        was nothing it could send."""
        restore = []
        for rid in list(self.waiting):
            r = self.requests[rid]
            if r.resume_mode == "restore" and len(self.running) + len(self.restoring) + len(restore) < self.a.max_batch:
                self.waiting.remove(rid)
                restore.append(r)
        if restore:
            entries = []
            for r in restore:
                k, p = len(r.replay), len(r.prompt)
                self.restoring.add(r.id)
                entries.append({"request": r.id, "step": k, "run": r.run, "positions": [p + k - 1, p + k - 1],
                                "restore": True, "need": p + k - 1, "have": p + k - 1, "prompt_len": p,
                                "params": r.params(), **({"expect": True} if r.expect else {})})
            self.run_step("restore", entries, [])
            return True
        prefill, budget = [], self.a.max_prefill_tokens
        while self.waiting:
            r = self.requests[self.waiting[0]]
            if r.resume_mode == "restore":
                break  # the batch is full of restores: wait
            n = len(r.prompt) + len(r.generated)
            if prefill and n > budget:
                break
            try:
                self.engine.begin(r.id, r.reserve, r.params())
            except PoolFull:
                break  # admission control: wait for blocks; the load in pong says so
            self.waiting.popleft()
            prefill.append(r)
            budget -= n
        if prefill:
            entries, tokens = [], []
            for r in prefill:
                seq = r.prompt + r.generated
                entries.append({"request": r.id, "step": len(r.generated), "run": r.run, "positions": [0, len(seq)],
                                "params": r.params()})
                tokens.extend(seq)
            self.run_step("prefill", entries, tokens)
            return True
        entries, tokens = [], []
        busy = set().union(*(st["requests"] for st in self.steps.values()))
        free = [rid for rid in self.running if rid not in busy]
        window = free[: self.a.max_batch]
        for rid in window:
            r = self.requests[rid]
            k, p = len(r.generated), len(r.prompt)
            e = {"request": rid, "step": k, "run": r.run, "positions": [p + k - 1, p + k]}
            if k < len(r.replay):
                e["replay"] = True  # catching up after a restore: token k is known, not emitted again
            entries.append(e)
            tokens.append(r.generated[-1])
        prefetch = None
        if self.engine.swap is not None and len(free) > len(window):
            # Swapping, more run than one step takes: microbatches of --max-batch take turns
            # (this one goes to the back), and every stage starts swapping in the next one's
            # caches while it computes this one (its rows: the positions its next step needs).
            nxt = free[len(window): len(window) + self.a.max_batch]
            prefetch = [[rid, len(self.requests[rid].prompt) + len(self.requests[rid].generated)] for rid in nxt]
            chosen = set(window)
            self.running = [rid for rid in self.running if rid not in chosen] + window
        if entries:
            self.run_step("decode", entries, tokens, prefetch)
        return bool(entries)

    def run_step(self, kind, entries, tokens, prefetch=None) -> None:
        entries, tokens, failed = self.prepare(entries, tokens)
        if kind == "restore":
            if self.a.depth == 1:
                restored, failed = self.settle_restores(entries, failed)
                self.emit([], [], failed)
                self.after_step([], [], failed, restored)
                return
            self._send_step({"op": "forward", "kind": "restore", "batch": entries, "failed": failed,
                             "dtype": frame.dtype_name(self.engine.dtype), "shape": [0, self.cfg.hidden]}, entries)
            return
        if not entries and self.a.depth == 1:
            self.emit([], [], failed)
            self.after_step([], [], failed)
            return
        t = time.perf_counter()
        if entries:
            x = self.engine.forward(kind, entries, tokens, prefetch=_rows(prefetch))
            t = self._trace("forward", t, kind=kind, rows=x.shape[0])
        else:  # only failures: an empty forward carries them to the last stage
            x = torch.empty(0, self.cfg.hidden, dtype=self.engine.dtype)
        if kind == "prefill":
            for e in entries:
                if e["request"] not in self.running:
                    self.running.append(e["request"])
        if self.a.depth == 1:
            toks = self.engine.sample(entries, x)
            self.emit(entries, toks, failed)
            self.after_step(entries, toks, failed)
            return
        h = {"op": "forward", "kind": kind, "batch": entries, "failed": failed,
             "dtype": frame.dtype_name(x.dtype), "shape": list(x.shape)}
        if prefetch:
            h["prefetch"] = prefetch
        self._send_step(h, entries, frame.tensor_bytes(x))
        self._trace("send", t, kind=kind)

    def _send_step(self, h: dict, entries, payload=b"") -> None:
        """Sends a step down the route, numbered so that only its own `sampled` ends it."""
        self.seq += 1
        st = self.steps[self.seq] = {"seq": self.seq, "requests": {e["request"] for e in entries},
                                     "since": time.monotonic(), "to": None}
        try:
            st["to"] = self.send_next({**h, "origin": self.origin, "seq": self.seq}, payload, self.route)
        except (OSError, frame.Closed) as e:
            self._pipeline_lost(str(e))

    def _pipeline_lost(self, why: str) -> None:
        """The step in flight will not come back. Its requests are set aside here (their KV kept)
        and their routers' connections closed: a router that loses its first stage pauses what it
        had running and resubmits it (resume_from/generated) once it is connected again, and the
        stages restore the caches they kept instead of recomputing them."""
        lost = list(self.running) + list(self.restoring) + list(self.waiting)
        print(f"schooner_serve: pipeline broken ({why}); {len(lost)} requests set aside for the routers' resubmits",
              file=sys.stderr, flush=True)
        self.steps.clear()
        for c in list(self.links.values()):
            c.close()
        self.links.clear()
        owners = {id(self.requests[rid].conn) for rid in lost if rid in self.requests}
        for rid in lost:
            self._set_aside(rid)
        # Only the routers that had requests here learn of it: one that connected after its old
        # pipeline broke (and resubmits along a new route) must not lose its fresh connection.
        for c in list(self.routers):
            if id(c) in owners:
                c.close()  # its reader reports it closed; the router reconnects and resubmits

    def _route_changed(self, route) -> None:
        """The router now serves this first stage with other stages (it replaced a lost or noticed
        one). The step in flight along the old route is given up (an answer to it, if any comes,
        is stale), and the requests submitted along the old route are set aside until the router
        resubmits them along the new one, as it does with every request it had running when its
        pipeline changed. This also frees the first stage when its old successor vanished without
        closing the connection (a machine gone, not a process)."""
        old = [rid for rid, r in self.requests.items() if r.route != route]
        for rid in old:
            self._set_aside(rid)
        if self.steps or old:
            print(f"schooner_serve: the route changed to {route}: {len(self.steps)} steps in flight given up, "
                  f"{len(old)} requests set aside for their resubmits", file=sys.stderr, flush=True)
        self.steps.clear()

    def _router_gone(self, conn) -> None:
        """The first stage's router connection closed: the router has paused its requests (or is
        gone), so they stop here until it resubmits them (a replaced pipeline's first stage must
        not keep stepping them through a stage that now serves its successor)."""
        for rid, r in list(self.requests.items()):
            if r.conn is conn:
                self._set_aside(rid)

    def _set_aside(self, rid) -> None:
        self._forget(rid, keep_kv=True)
        self.orphans[rid] = time.monotonic() + self.a.orphan_ttl

    def _free_orphans(self) -> None:
        """Frees, on every stage, the set-aside requests no router took up in time."""
        now = time.monotonic()
        for rid, deadline in list(self.orphans.items()):
            if now < deadline or rid in self.requests:
                continue
            del self.orphans[rid]
            self.engine.release(rid)
            if self.a.depth > 1 and (self.route or self.a.next):
                try:
                    self.send_next({"op": "release", "request": rid, "reason": "expired"}, route=self.route)
                except (OSError, frame.Closed):
                    pass

    def on_sampled(self, h) -> None:
        seq = h.get("seq", self.seq)
        if h.get("origin", self.origin) != self.origin or seq not in self.steps:
            # The answer to a step this process did not send, or one it gave up on: its
            # requests were set aside, and the router resubmits them.
            print(f"schooner_serve: stale sampled (origin {h.get('origin')}, step {h.get('seq')}) dropped",
                  file=sys.stderr, flush=True)
            return
        batch = h.get("batch", [])
        if TRACE:
            print(f"schooner_serve: trace stage {self.a.stage} step {seq} back after "
                  f"{1e3 * (time.monotonic() - self.steps[seq]['since']):.1f} ms", file=sys.stderr, flush=True)
        del self.steps[seq]
        self.after_step([{"request": b["request"], "step": b["step"], "run": b.get("run")} for b in batch],
                        [b["token"] for b in batch], h.get("failed", []), h.get("restored", []))

    def settle_restores(self, entries, failed):
        """The last stage: a restore entry's `have` is now the fewest positions any stage holds.
        With less than the prompt the request cannot resume from a replica (restore_failed: the
        router resubmits it with resume_mode reprefill); else it resumes at step have - P."""
        restored, failed = [], list(failed)
        for e in entries:
            if e["have"] < e["prompt_len"]:
                failed.append({"request": e["request"], "run": e.get("run"), "code": "restore_failed",
                               "message": f"{e['request']}: the stages hold positions 0:{e['have']} of its KV cache, "
                                          f"less than its prompt of {e['prompt_len']} "
                                          f"({'; '.join(e.get('held') or ['no stage said'])}): "
                                          "resubmit with resume_mode reprefill"})
                self.engine.release(e["request"])
            else:
                restored.append({"request": e["request"], "run": e.get("run"), "have": e["have"]})
        return restored, failed

    def _current(self, item):
        """The request an entry, failure or restore of the first stage's frames is about, unless
        it was replaced (resubmitted) or forgotten meanwhile."""
        r = self.requests.get(item["request"])
        if r is None or (item.get("run") is not None and item["run"] != r.run):
            return None
        return r

    def after_step(self, entries, toks, failed, restored=()) -> None:
        for x in restored:
            r = self._current(x)
            if r is None or r.id not in self.restoring:
                continue
            self.restoring.discard(r.id)
            a = x["have"] - len(r.prompt)  # the KV of positions [0, P+a) is everywhere: token a is next fed
            r.generated = r.replay[:a + 1]
            self.running.append(r.id)
        for f in failed:
            r = self._current(f)
            if r is not None:
                self._release(r, "failed")
        for e, t in zip(entries, toks):
            r = self._current(e)
            if r is None or e["step"] != len(r.generated):
                continue  # cancelled or superseded meanwhile
            if e["step"] < len(r.replay):
                t = r.replay[e["step"]]  # a catch-up step after a restore: the token is known
            r.generated.append(t)
            if t in r.stop or len(r.generated) >= r.max_tokens:
                # A handed-off prompt's replica stays for the token pool, unless token 0 ended it.
                self._release(r, "done", keep_replica=r.handoff and t not in r.stop)

    def prepare(self, entries, rows, failed=None):
        """Restores and reservations before a step (every stage): entries that cannot go on are
        taken out (with their rows) and reported in `failed`."""
        failed = list(failed or [])
        keep = []
        for i, e in enumerate(entries):
            r = e["request"]
            try:
                if e.get("restore"):
                    have = self.engine.restore(r, e["need"], e["params"]["reserve"], e["params"],
                                               expect=bool(e.get("expect")))
                    e["have"] = min(e["have"], have)
                    # Each stage's part, carried to the last stage for a failure's message.
                    e.setdefault("held", []).append(f"stage {self.a.stage}: {have} ({self.engine.restore_source})")
                elif "params" in e:
                    self.engine.begin(r, e["params"]["reserve"], e["params"])
                elif not self.engine.holds(r):
                    raise RestoreFailed(f"{r}: stage {self.a.stage} holds no KV cache for it")
                keep.append(i)
            except (RestoreFailed, PoolFull) as ex:
                code = "restore_failed" if isinstance(ex, RestoreFailed) else "overloaded"
                failed.append({"request": r, "run": e.get("run"), "code": code, "message": str(ex)})
                self.engine.release(r)
        if len(keep) == len(entries):
            return entries, rows, failed
        rows_per = [e["positions"][1] - e["positions"][0] for e in entries]
        starts = [sum(rows_per[:i]) for i in range(len(entries))]
        sel = [j for i in keep for j in range(starts[i], starts[i] + rows_per[i])]
        if isinstance(rows, list):
            rows = [rows[j] for j in sel]
        else:
            rows = rows[torch.tensor(sel, dtype=torch.long)] if sel else rows[:0]
        return [entries[i] for i in keep], rows, failed

    # later stages ------------------------------------------------------------------------

    def _trace(self, what: str, t0: float, **kw) -> float:
        """With TRACE, one line on stderr: this stage, what, its time since t0; returns now."""
        if not TRACE:
            return t0
        if self.engine.device.type == "cuda":
            torch.cuda.synchronize(self.engine.device)
        t = time.perf_counter()
        extra = " ".join(f"{k}={v}" for k, v in kw.items())
        print(f"schooner_serve: trace stage {self.a.stage} {what} {1e3 * (t - t0):.1f} ms {extra}",
              file=sys.stderr, flush=True)
        return t

    def on_forward(self, h, payload) -> None:
        t = time.perf_counter()
        try:
            x = frame.tensor_from(payload, h["dtype"], h["shape"])
            entries, x, failed = self.prepare(h["batch"], x, h.get("failed"))
            t = self._trace("prepare", t, kind=h.get("kind"), seq=h.get("seq"), payload=len(payload))
            if entries and h["kind"] != "restore":
                x = self.engine.forward(h["kind"], entries, x, prefetch=_rows(h.get("prefetch")))
                t = self._trace("forward", t, kind=h["kind"], rows=x.shape[0])
        except (KeyError, ValueError, frame.FrameError) as e:
            print(f"schooner_serve: bad forward: {e}", file=sys.stderr, flush=True)
            return
        step = {"origin": h.get("origin"), "seq": h.get("seq")}  # echoed: which step this is
        route = h.get("route")
        try:
            if h["kind"] == "restore":
                if not self.last:
                    self.send_next({"op": "forward", "kind": "restore", "batch": entries, "failed": failed,
                                    "dtype": h["dtype"], "shape": [0, self.cfg.hidden], **step}, route=route)
                    return
                restored, failed = self.settle_restores(entries, failed)
                self.emit([], [], failed)
                self.send_next({"op": "sampled", "batch": [], "failed": failed, "restored": restored, **step},
                               route=route)
                return
            if not self.last:
                self.send_next({"op": "forward", "kind": h["kind"], "batch": entries, "failed": failed,
                                "dtype": frame.dtype_name(x.dtype), "shape": list(x.shape), **step},
                               frame.tensor_bytes(x) if entries else b"", route)
                self._trace("send", t, kind=h["kind"])
                return
            toks = self.engine.sample(entries, x) if entries else []
            self.emit(entries, toks, failed)
            t = self._trace("sample+emit", t, kind=h["kind"])
            self.send_next({"op": "sampled", "batch": [{"request": e["request"], "step": e["step"], "run": e.get("run"),
                                                        "token": t} for e, t in zip(entries, toks)], "failed": failed,
                            **step}, route=route)
        except (OSError, frame.Closed) as e:
            # The step dies here; the first stage's step timeout or its router's failover
            # resubmits its requests.
            print(f"schooner_serve: forwarding step {step['seq']}: {e}", file=sys.stderr, flush=True)

    def on_release(self, h) -> None:
        rid = h.get("request")
        self.engine.release(rid, keep_replica=h.get("keep_replica") is True)
        if not self.last:
            try:
                self.send_next({k: v for k, v in h.items() if k != "route"}, route=h.get("route"))
            except (OSError, frame.Closed):
                pass
            return
        if h.get("reason") == "cancelled" and rid not in self.done_sent:
            self.emit_done(rid, "cancelled", self.emitted.get(rid, h.get("steps", 0)))
        self.emitted.pop(rid, None)
        self.done_sent.discard(rid)

    # last stage ---------------------------------------------------------------------------

    def emit(self, entries, toks, failed=()) -> None:
        for f in failed:
            r = self.requests.get(f["request"]) if self.first else None
            self.to_router(frame.error(f["code"], f["message"], request=f["request"]), r.conn if r else None)
        for e, t in zip(entries, toks):
            if e.get("replay"):
                continue  # a catch-up step: the router has this token already
            rid, k = e["request"], e["step"]
            conn = self.requests[rid].conn if self.first and rid in self.requests else None
            p = self.engine.params.get(rid, {})
            self.to_router({"op": "token", "request": rid, "step": k, "token": t}, conn)
            self.emitted[rid] = k + 1
            self.done_sent.discard(rid)
            reason = "stop" if t in p.get("stop", ()) else ("length" if k + 1 >= p.get("max_tokens", 1 << 62) else None)
            if reason:
                self.emit_done(rid, reason, k + 1, conn)
                if self.first:
                    self.done_sent.discard(rid)
                    self.emitted.pop(rid, None)
            self.tokens_out += 1
            if self.a.exit_after_tokens and self.tokens_out >= self.a.exit_after_tokens:
                if self.engine.writer is not None and self.a.exit_flush:
                    self.engine.writer.flush(5)
                print(f"schooner_serve: exiting after {self.tokens_out} tokens (--exit-after-tokens)",
                      file=sys.stderr, flush=True)
                os._exit(3)

    def emit_done(self, rid, reason, steps, conn=None) -> None:
        self.to_router({"op": "done", "request": rid, "reason": reason, "steps": steps}, conn)
        self.done_sent.add(rid)


def _rows(prefetch):
    """A forward frame's `prefetch` ([[request, positions], ...], the next step's rows) as the
    engine's (request, positions) tuples; None when absent or malformed (a prefetch is only a
    hint: the next step swaps in whatever it lacks)."""
    if not isinstance(prefetch, list):
        return None
    rows = [(x[0], x[1]) for x in prefetch if isinstance(x, list) and len(x) == 2
            and isinstance(x[0], str) and isinstance(x[1], int)]
    return rows or None


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python3 -m schooner_serve.worker", description=__doc__.split("\n\n")[0])
    add_model_args(p)
    p.add_argument("--stage", type=int, default=0)
    p.add_argument("--depth", type=int, default=1)
    p.add_argument("--layers", default="", help="the blocks a:b (0-based, end exclusive) of this stage; default all")
    p.add_argument("--listen", default="127.0.0.1:0")
    p.add_argument("--next", default="", help="the next stage; from the last stage, the first stage")
    p.add_argument("--holder", default="", help="KV-cache holder (host:port or unix:/path) to replicate to and restore from")
    p.add_argument("--replicate", choices=("on", "off"), default="on")
    p.add_argument("--deployment", default="default")
    p.add_argument("--resume-mode", choices=("auto", "restore", "reprefill"), default="auto",
                   help="how a resubmit (resume_from > 0) rebuilds the KV cache; a submit's resume_mode wins")
    p.add_argument("--device", default="", help="cpu or cuda[:n]; default cuda when there is one")
    p.add_argument("--dtype", default="", help="float32 or bfloat16; default bf16 on GPU, f32 on CPU")
    p.add_argument("--block", type=int, default=16, help="tokens per KV block")
    p.add_argument("--kv-blocks", type=int, default=None, help="KV pool size in blocks (else --kv-mem-gib)")
    p.add_argument("--kv-mem-gib", type=float, default=None, help="KV pool memory budget (default 64 MiB)")
    p.add_argument("--max-batch", type=int, default=64, help="sequences in one decode step")
    p.add_argument("--inflight", type=int, default=1,
                   help="steps the first stage keeps in flight through the pipeline, each of other requests "
                        "(microbatches of at most --max-batch): the pipeline's depth keeps every stage busy")
    p.add_argument("--swap-host-gib", type=float, default=0.0,
                   help="microbatch swapping: requests are admitted into this much pinned host memory and hold "
                        "KV pages in the GPU pool only while a step uses them, so more run than the GPU pool "
                        "holds, --max-batch a step, the next microbatch swapped in while one computes; 0: off")
    p.add_argument("--capture-context", type=int, default=None,
                   help="on a GPU, capture decode graphs up to this many cached positions at start "
                        "(default the model's max_seq; 0: capture each on first use)")
    p.add_argument("--max-prefill-tokens", type=int, default=8192)
    p.add_argument("--warmup-tokens", type=int, default=None,
                   help="a throwaway prefill of this many positions before listening, so the first real "
                        "one is not cold (default: on a GPU --max-prefill-tokens, on a CPU 0)")
    p.add_argument("--max-waiting", type=int, default=1024, help="queued requests before submits get overloaded")
    p.add_argument("--max-payload", type=int, default=frame.DEFAULT_MAX_PAYLOAD)
    p.add_argument("--connect-timeout", type=float, default=30.0)
    p.add_argument("--step-timeout", type=float, default=120.0,
                   help="the first stage gives a step up (and has its requests resubmitted) when its "
                        "sampled has not come back in this many seconds; 0: wait forever")
    p.add_argument("--orphan-ttl", type=float, default=120.0,
                   help="how long the KV cache of a request set aside (its router or pipeline lost) is "
                        "kept for a resubmit before every stage frees it")
    p.add_argument("--restore-wait", type=float, default=3.0,
                   help="seconds a restore's get may wait at the holder while the stage this one replaces "
                        "still streams the request's prompt there (a handover on a notice); 0: never wait")
    p.add_argument("--preload", type=float, default=0.0,
                   help="before listening, seconds to spend preloading every replica of this stage the holder "
                        "keeps (a standby taking over a noticed machine; the switch then fetches only the steps "
                        "decoded since); 0: off")
    p.add_argument("--term-flush", type=float, default=5.0,
                   help="on SIGTERM, seconds to let the replication writer send what it queued before exiting")
    p.add_argument("--exit-after-tokens", type=int, default=0, help="fault injection: die after emitting N tokens")
    p.add_argument("--exit-flush", action="store_true", help="with --exit-after-tokens: let the replica catch up first")
    return p.parse_args(argv)


def main(argv=None) -> None:
    a = parse_args(argv)
    # `kill -USR1 <pid>` prints every thread's stack: what a stuck worker is waiting for.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    torch.set_num_threads(max(1, min(torch.get_num_threads(), int(os.environ.get("SCHOONER_SERVE_THREADS", "0")) or 64)))
    Worker(a).serve()


if __name__ == "__main__":
    main()
