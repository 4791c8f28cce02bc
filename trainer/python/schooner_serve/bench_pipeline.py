"""Failover of a pipeline stage, two stages as two worker processes (and a standby for each
failover), on one machine: what a user's deployment does when the machine of its last stage is
lost, on the real worker, holder and protocol, timed from the client.

For each context length × batch size:
  reference  the requests run on the intact pipeline (warm-up, and the tokens every other run
             must reproduce)
  restore    the same requests again; once each has --generated tokens the last stage's process
             is killed (SIGKILL); the client resubmits every request with what it was delivered,
             along the route of the first stage and a standby (weights loaded, decode graphs
             captured, as a standby the deployment keeps); the standby restores its KV cache from
             the holder, the first stage keeps its own
  reprefill  the same, the resubmits asking for resume_mode reprefill: both stages recompute
             prompt + generated tokens (what vLLM and NVIDIA Dynamo do), on stages that do not
             replicate (vLLM and Dynamo keep no replica; the first stage never needs its own,
             and the re-prefill's standby runs with --replicate off), so the baseline carries
             no cost of ours
The time reported is from the resubmit to the next token of every request (the router's
detection of the loss, three missed pings, is not in it: it is the same for both). Prints a
table, writes JSON.

  python3 -m schooner_serve.bench_pipeline --model tiny --contexts 64 --batches 2 --device cpu
  python3 -m schooner_serve.bench_pipeline --model 8b --contexts 2048,8192 --batches 1,8 \\
      --holder unix:/tmp/kv.sock --out pipeline.json

Without --holder it starts the Python FakeHolder test double (TCP on 127.0.0.1) in this process.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import torch

from .bench_failover import add_case_args
from .bench_failover import prompts as make_prompts
from .client import RouterClient
from .config import CONFIGS


class _Client(RouterClient):
    """A RouterClient that records which of its connections closed."""

    def __init__(self, *a, **kw):
        self.closed_conns: set[int] = set()
        super().__init__(*a, **kw)

    def _read(self, c):
        super()._read(c)
        with self.cv:
            self.closed_conns.add(id(c))
            self.cv.notify_all()

    def wait_for(self, cond, timeout: float, what: str):
        end = time.monotonic() + timeout
        with self.cv:
            while not cond():
                left = end - time.monotonic()
                if left <= 0:
                    raise TimeoutError(what)
                self.cv.wait(left)


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Stage:
    """One worker process; its stderr goes to a log file."""

    def __init__(self, a, stage: int, layers: str, kv_gib: float, capture: int, logdir: str, name: str,
                 replicate: bool = True):
        self.port = _free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.log = os.path.join(logdir, f"{name}.log")
        args = [sys.executable, "-m", "schooner_serve.worker", "--model", a.model, "--seed", str(a.seed),
                "--stage", str(stage), "--depth", "2", "--layers", layers, "--listen", self.addr,
                "--holder", a.holder_addr, "--deployment", a.deployment, "--kv-mem-gib", f"{kv_gib:.3f}",
                "--max-batch", str(a.max_batch), "--capture-context", str(capture),
                "--replicate", "on" if replicate else "off"]
        if a.device:
            args += ["--device", a.device]
        if a.dtype:
            args += ["--dtype", a.dtype]
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.t_spawn = time.perf_counter()
        self.p = subprocess.Popen(args, cwd=here, env=env, stdout=subprocess.DEVNULL, stderr=open(self.log, "w"))
        self.ready_s = None

    def wait_ready(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        while True:
            with open(self.log) as f:
                if "listening on" in f.read():
                    break
            if self.p.poll() is not None:
                raise RuntimeError(f"worker exited ({self.p.returncode}); see {self.log}")
            if time.monotonic() > end:
                raise TimeoutError(f"worker not listening after {timeout} s; see {self.log}")
            time.sleep(0.05)
        if self.ready_s is None:
            self.ready_s = time.perf_counter() - self.t_spawn

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
        self.p.wait()


def _run_to_end(first: str, last: str, rids, prompts, n: int, timeout: float):
    c = _Client(first, last)
    for rid, p in zip(rids, prompts):
        c.submit(rid, p, n, stop=[], route=[first, last])
    out = c.wait(rids, timeout)
    c.close()
    return out


def _fail_and_resume(a, s0: Stage, victim: Stage, standby: Stage, rids, prompts, n: int, mode: str):
    """Runs the requests until each has --generated tokens, kills the victim, resubmits along
    s0 → standby and times the next token of every request. Returns (ms, tokens, delivered)."""
    c = _Client(s0.addr, victim.addr)
    for rid, p in zip(rids, prompts):
        c.submit(rid, p, n, stop=[], route=[s0.addr, victim.addr])
    c.wait_for(lambda: all(len(c.tokens.get(r, {})) >= a.generated for r in rids), a.timeout,
               "the requests before the failure")
    victim.kill()
    # Everything the dead stage sent is read once its connection reports closed.
    c.wait_for(lambda: id(c.token_conn) in c.closed_conns, a.timeout, "the lost stage's connection to close")
    with c.cv:
        delivered = {r: [t for _, t in sorted(c.tokens.get(r, {}).items())] for r in rids}
    c.close()
    standby.wait_ready(a.timeout)

    c = _Client(s0.addr, standby.addr)
    route = [s0.addr, standby.addr]
    t0 = time.perf_counter()
    for rid, p in zip(rids, prompts):
        c.submit(rid, p, n, stop=[], route=route, resume_from=len(delivered[rid]), generated=delivered[rid],
                 resume_mode=mode)
    c.wait_for(lambda: all(r in c.done or len(c.tokens.get(r, {})) >= 1 for r in rids), a.timeout,
               "the next token after the failover")
    ms = (time.perf_counter() - t0) * 1e3
    c.wait(rids, a.timeout)
    with c.cv:  # the steps from each resubmit's resume_from on
        after = {r: [t for s, t in sorted(c.tokens.get(r, {}).items()) if s >= len(delivered[r])] for r in rids}
    errors = [e for e in c.errors if e.get("code") not in ("overloaded",)]
    c.close()
    if errors:
        raise RuntimeError(f"{mode}: errors after the failover: {errors[:3]}")
    return ms, {r: delivered[r] + after[r] for r in rids}, {r: len(delivered[r]) for r in rids}


def run(a) -> dict:
    cfg = CONFIGS[a.model]
    split = cfg.layers // 2
    contexts = [int(x) for x in a.contexts.split(",")]
    batches = [int(x) for x in a.batches.split(",")]
    a.max_batch = max(batches)
    n = a.generated + a.tail
    top = max(contexts) + n
    # KV per stage: every position of the largest case, twice (a failure's set-aside caches
    # wait beside the resubmits), plus room; bytes per position per layer: K and V, kv_heads ×
    # head_dim, two bytes in bf16 (four in f32).
    on_gpu = a.device.startswith("cuda") or (not a.device and torch.cuda.is_available())
    width = 2 if (a.dtype or ("bfloat16" if on_gpu else "float32")) == "bfloat16" else 4
    per_pos = 2 * cfg.kv_heads * (cfg.hidden // cfg.heads) * width * (cfg.layers - split)
    kv_gib = 2 * top * a.max_batch * per_pos / (1 << 30) + 0.25
    os.makedirs(a.logs, exist_ok=True)
    spawned = 0

    def stage(idx: int, replicate: bool = True) -> Stage:
        nonlocal spawned
        spawned += 1
        layers = f"0:{split}" if idx == 0 else f"{split}:{cfg.layers}"
        return Stage(a, idx, layers, kv_gib, top, a.logs, f"stage{idx}-{spawned}", replicate)

    # The first stage survives every failover with its own cache: it never needs a replica.
    s0, last = stage(0, replicate=False), stage(1)
    standby = stage(1)
    s0.wait_ready(a.timeout)
    last.wait_ready(a.timeout)
    print(f"{cfg.name} in two stages (layers 0:{split} and {split}:{cfg.layers}), KV pool {kv_gib:.2f} GiB each; "
          f"stages up in {s0.ready_s:.1f} / {last.ready_s:.1f} s; holder {a.holder_addr}", file=sys.stderr, flush=True)
    rows = []
    cases = [(ctx, b) for ctx in contexts for b in batches]
    for ci, (ctx, b) in enumerate(cases):
        prompts = make_prompts(cfg, b, ctx, a.seed + ctx + b)
        tag = f"c{ctx}b{b}"
        ref = _run_to_end(s0.addr, last.addr, [f"{tag}-ref{i}" for i in range(b)], prompts, n, a.timeout)
        ref = list(ref.values())
        row = {"context": ctx, "batch": b, "generated": a.generated, "max_tokens": n}
        for mode in ("restore", "reprefill"):
            rids = [f"{tag}-{mode}{i}" for i in range(b)]
            ms, toks, delivered = _fail_and_resume(a, s0, last, standby, rids, prompts, n, mode)
            row[f"{mode}_ms"] = ms
            row[f"{mode}_delivered"] = sorted(set(delivered.values()))
            row[f"{mode}_match"] = [toks[r] == ref[i] for i, r in enumerate(rids)]
            # The standby now serves and the next failover's is started: the re-prefill's
            # without replication; after it, one that replicates, for the next case.
            last, standby = standby, stage(1, replicate=mode == "reprefill")
        row["speedup"] = row["reprefill_ms"] / row["restore_ms"]
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        if ci + 1 < len(cases):
            # The next case's restore needs a last stage that replicated, which the
            # re-prefill's was not: the standby that replicates takes over (not timed).
            last.kill()
            last, standby = standby, stage(1)
    for s in (s0, last, standby):
        s.kill()
    return {"model": cfg.to_json(), "stages": 2, "device": a.device or ("cuda" if torch.cuda.is_available() else "cpu"),
            "dtype": a.dtype or "default", "holder": a.holder or "fake", "torch": torch.__version__, "rows": rows}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_case_args(p)
    p.add_argument("--tail", type=int, default=8, help="tokens generated after the failover")
    p.add_argument("--device", default="", help="the workers' device (default cuda when there is one)")
    p.add_argument("--dtype", default="")
    p.add_argument("--holder", default="", help="a KV-cache holder's address; default: FakeHolder in this process")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds any one wait may take")
    p.add_argument("--logs", default="bench_pipeline_logs", help="the workers' logs")
    p.add_argument("--out", default="bench_pipeline.json")
    a = p.parse_args(argv)
    a.deployment = "bench-" + uuid.uuid4().hex[:8]
    fake = None
    if a.holder:
        a.holder_addr = a.holder
    else:
        from .fake_holder import FakeHolder
        fake = FakeHolder()
        a.holder_addr = fake.addr
    try:
        out = run(a)
    finally:
        if fake is not None:
            fake.close()
    print("ctx | batch | K | restore ms | reprefill ms | restore vs reprefill | tokens match")
    for r in out["rows"]:
        match = all(r["restore_match"]) and all(r["reprefill_match"])
        print(f"{r['context']} | {r['batch']} | {r['restore_delivered']} | {r['restore_ms']:.1f} | "
              f"{r['reprefill_ms']:.1f} | {r['speedup']:.2f}x | {match}")
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
