"""The serving loops of bench_disagg's processes: a colocated engine (prefill and decode in one
loop), a prompt engine and a token engine (disagg.py), each in a process of its own, all reading
the same arrival schedule against one clock (time.monotonic, system-wide on Linux).

The colocated loop schedules as vLLM does without chunked prefill: arrived requests are
prefilled first, as many as fit --max-prefill-tokens and the KV pool, and every running request
waits for that prefill before its next decode step (DéjàVu's bubble). The prompt loop only
prefills and hands off; the token loop admits handed-off requests at step boundaries (their
restore blocks the step, as the colocated prefill does) and decodes. Each records, per request,
the time each token was sampled (the host has the token, so the device work is done).
"""

from __future__ import annotations

import collections
import contextlib
import os
import queue
import time

import torch

from . import gpu_split
from .config import CONFIGS
from .disagg import Handoff, PromptEngine, TokenEngine
from .engine import StageEngine
from .running import Running, params, prefill

clock = time.monotonic


def make_engine(spec: dict, role: str) -> StageEngine:
    """The role's whole-model engine from the bench's spec (a dict: it crosses processes)."""
    torch.set_num_threads(spec["threads"])
    if role != "token":
        # Only the token engine restores: the others lend the holder no memory (on a GPU a stage
        # lends and page-locks up to 8 GiB, and maps the holder's arena, at start).
        os.environ["SCHOONER_KV_LEND"] = "0"
    c = CONFIGS[spec["model"]]
    replicate = role != "colocated" or spec["colocated_replicate"]
    return StageEngine(c, spec["seed"], 0, c.layers, device=spec["device"],
                       dtype=getattr(torch, spec["dtype"]) if spec["dtype"] else None,
                       kv_blocks=spec["kv_blocks"][role], block=spec["block"],
                       holder=spec["holder"] if replicate else None, deployment=spec["deployment"],
                       restore_wait_s=spec["restore_wait"] if role == "token" else 0.0)


def warm(engine: StageEngine, spec: dict, role: str) -> None:
    """Before the clock: one prefill of a prompt of the bench's length (replicated, then dropped)
    and, for the roles that decode, decode graphs captured for every batch and context the run
    can reach and one restore through the holder (the token role), so no timed step pays for a
    first use."""
    n, out = spec["prompt"], spec["output"]
    req = {"request": f"warm-{role}-{os.getpid()}", "prompt": [1] * n, "max_tokens": out}
    if role == "prompt":
        PromptEngine(engine).prefill([req])
        engine.writer.drop(req["request"])  # its replica: nobody restores it
    elif role == "token":
        (h,) = PromptEngine(engine).prefill([req])
        if engine.writer is not None:
            engine.writer.flush(60)
        t = TokenEngine(engine)
        t.admit(h)
        t.step()
        engine.release(req["request"])
        engine.restore_stats.clear()
    else:
        prefill(engine, [req])
        engine.release(req["request"])
    if engine.graphs is not None and role != "prompt":
        batches = [b for b in (1 << i for i in range(16)) if b < spec["max_batch"]] + [spec["max_batch"]]
        engine.graphs.prepare(batches, range(n + 1, n + out + 1, max(1, out // 4)))
    if engine.device.type == "cuda":
        torch.cuda.synchronize(engine.device)


def take(waiting: collections.deque, pool, running: int, max_batch: int, max_tokens: int, room) -> list:
    """The requests at the head of waiting (in order) that one prefill takes: at most max_tokens
    prompt tokens (at least one request), max_batch running with them, KV room(request) each."""
    batch, tokens, blocks = [], 0, 0
    while waiting and running + len(batch) < max_batch:
        r = waiting[0]
        n, need = len(r["prompt"]), pool.blocks_needed(room(r))
        if (batch and tokens + n > max_tokens) or blocks + need > pool.num_free:
            break
        batch.append(waiting.popleft())
        tokens, blocks = tokens + n, blocks + need
    return batch


class Arrivals:
    """The schedule's requests as they arrive: offsets from t0 on the shared clock."""

    def __init__(self, schedule: list[dict], t0: float):
        self.pending, self.t0 = collections.deque(schedule), t0

    def due(self, waiting: collections.deque) -> None:
        now = clock()
        while self.pending and self.t0 + self.pending[0]["arrival"] <= now:
            waiting.append(self.pending.popleft())

    def sleep_to_next(self) -> None:
        if self.pending:
            time.sleep(max(0.0, self.t0 + self.pending[0]["arrival"] - clock()))


def _record(rec: dict, rid: str, token: int) -> None:
    r = rec.setdefault(rid, {"times": [], "tokens": []})
    r["times"].append(clock())
    r["tokens"].append(token)


def serve_colocated(engine: StageEngine, spec: dict, schedule: list[dict], t0: float) -> dict:
    arrivals, waiting, rec = Arrivals(schedule, t0), collections.deque(), {}
    running = Running(engine, spec["max_batch"])
    while arrivals.pending or waiting or len(running):
        arrivals.due(waiting)
        batch = take(waiting, engine.pool, len(running), spec["max_batch"], spec["max_prefill_tokens"],
                     lambda r: params(r)["reserve"])
        if batch:
            for r, t in zip(batch, prefill(engine, batch)):
                _record(rec, r["request"], t)
                running.add(r["request"], len(r["prompt"]), [t])
        elif len(running):
            for rid, _k, t, _done in running.step():
                _record(rec, rid, t)
        else:
            arrivals.sleep_to_next()
    return {"requests": rec}


def serve_prompt(engine: StageEngine, spec: dict, schedule: list[dict], t0: float, handoffs) -> dict:
    arrivals, waiting, rec = Arrivals(schedule, t0), collections.deque(), {}
    role = PromptEngine(engine)
    while arrivals.pending or waiting:
        arrivals.due(waiting)
        batch = take(waiting, engine.pool, 0, 1 << 30, spec["max_prefill_tokens"], lambda r: len(r["prompt"]))
        if not batch:
            arrivals.sleep_to_next()
            continue
        for h in role.prefill(batch):
            _record(rec, h.request, h.first)
            if h.max_tokens > 1:
                handoffs.put(h.to_json())
    handoffs.put(None)  # no more
    return {"requests": rec}


def serve_token(engine: StageEngine, spec: dict, handoffs) -> dict:
    role, waiting, rec, more = TokenEngine(engine, spec["max_batch"]), collections.deque(), {}, True
    admitted = {}
    while more or waiting or len(role.running):
        # Hand-offs that came meanwhile; with nothing to do, wait for the next one.
        block = not waiting and not len(role.running)
        while more:
            try:
                h = handoffs.get(block=block, timeout=60 if block else None)
            except queue.Empty:
                if block:
                    raise TimeoutError("no hand-off from the prompt engine in 60 s")
                break
            block = False
            if h is None:
                more = False
            else:
                waiting.append(Handoff.from_json(h))
        while waiting and len(role.running) < spec["max_batch"] and \
                engine.pool.can_allocate(len(waiting[0].prompt) + waiting[0].max_tokens + 1):
            h = waiting.popleft()
            role.admit(h)
            admitted[h.request] = clock()
        for rid, _k, t, _done in role.step():
            _record(rec, rid, t)
    return {"requests": rec, "admitted": admitted, "token_engine": role.stats()}


def child(role: str, spec: dict, schedule: list[dict], ctl, handoffs=None) -> None:
    """A process of the bench: builds and warms its engine, says ready, takes t0, serves, and
    sends back what it recorded."""
    try:
        with contextlib.ExitStack() as stack:
            runs_on = gpu_split.enter_green(stack, spec.get("shares", {}).get(role, {}), spec["device"])
            engine = make_engine(spec, role)
            warm(engine, spec, role)
            ctl.send(("ready", {"device": str(engine.device), "dtype": str(engine.dtype),
                                "kv_blocks": engine.pool.num_blocks, **runs_on,
                                "mps_thread_pct": os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")}))
            t0 = ctl.recv()
            if role == "colocated":
                out = serve_colocated(engine, spec, schedule, t0)
            elif role == "prompt":
                out = serve_prompt(engine, spec, schedule, t0, handoffs)
            else:
                out = serve_token(engine, spec, handoffs)
            if engine.writer is not None:
                engine.writer.flush(60)  # what the replicas cost, whole, in the writer's stats
                out["writer"] = engine.writer.stats()
            engine.close()
        ctl.send(("done", out))
    except BaseException as e:  # noqa: BLE001 — the parent reports it and stops the others
        import traceback
        ctl.send(("error", f"{role}: {e!r}\n{traceback.format_exc()}"))
        raise
