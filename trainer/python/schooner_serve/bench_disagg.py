"""Prompt–token disaggregation against a colocated engine under a Poisson load, on one machine.

The same seeded schedule of requests (Poisson arrivals at --rate per second, prompts of
--prompt random tokens, --output tokens each, greedy) is served twice:
  colocated      one engine process prefills and decodes (prefill first, as vLLM schedules
                 without chunked prefill): the baseline, in the same run
  disaggregated  a prompt engine process prefills and streams each layer's KV to the KV-cache
                 holder as the layer finishes, and hands each request to a token engine
                 process, which restores the prompt from the holder (a waiting get with
                 "expect") and decodes (schooner_serve/disagg.py)
Both replicate to the holder (the colocated engine as every stage does, the token engine's
steps continuing the prompt's replica), so fault tolerance is alike (--colocated-replicate off
drops it from the baseline). Reports throughput (output tokens/s from the first arrival to the
last token), TTFT (arrival to token 0), time between tokens (every gap) and TPOT (a request's
mean gap after token 0), p50 and p99, and whether each request's tokens are the same in both.

Two processes, not two CUDA streams of one: the pools are separate workers in DéjàVu's design
and in a deployment, the holder is their transport on the real path (a waiting get across
processes), and one process would put both loops under one Python interpreter lock, so a
prefill's kernel launches would hold up the decode loop's. On one GPU without MPS the two
processes' kernels do not run at the same time: the GPU time-slices between them (--split
time-slice, the default). --split mps and --split green run both under one private MPS server,
each pool limited to its share of the GPU (--prompt-share; gpu_split.py), so a prefill and a
decode step run side by side on disjoint parts of it. Either way one GPU shows the scheduling
(decode steps no longer wait behind whole prefills in one loop), the transfer's cost and, split,
what each pool does with part of a GPU; not the added capacity of a separate token pool on
its own GPUs, which is where DéjàVu's up-to-2× comes from. On a CPU each process has
--threads threads (1), so the disaggregated run has twice the cores: a smoke run checks the
loops and the tokens, not the speed.

  python3 -m schooner_serve.bench_disagg --smoke                      # tiny model, CPU, seconds
  python3 -m schooner_serve.bench_disagg --model 8b --rate 2 --requests 64 --prompt 2048 \\
      --output 128 --holder unix:/tmp/kv.sock --out disagg.json

Without --holder it starts the Python FakeHolder test double (TCP on 127.0.0.1) in this process.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import multiprocessing as mp
import random
import sys
import time
import uuid

from schooner_interfere import mps

from .config import CONFIGS
from . import disagg_loops, gpu_split


def schedule(a) -> list[dict]:
    """The requests: Poisson arrivals (exponential gaps at --rate), random prompts, all seeded."""
    rnd = random.Random(a.seed)
    vocab = min(CONFIGS[a.model].vocab, 256)
    t, out = 0.0, []
    for i in range(a.requests):
        t += rnd.expovariate(a.rate)
        out.append({"request": f"r{i}", "arrival": t, "prompt": [rnd.randrange(vocab) for _ in range(a.prompt)],
                    "max_tokens": a.output, "temperature": 0.0, "seed": 0, "stop": []})
    return out


def blocks(tokens: int, block: int) -> int:
    return -(-tokens // block)


def spec(a, holder: str) -> dict:
    """What every process builds its engine from. KV pools: the colocated and the token engine
    hold --max-batch requests of prompt + output (and one more: a warm-up's), the prompt engine
    one prefill's worth (a.device as main resolved it)."""
    device = a.device
    per = blocks(a.prompt + a.output + 1, a.block)
    return {"model": a.model, "seed": a.seed, "device": device, "dtype": a.dtype, "block": a.block,
            "holder": holder, "deployment": f"bench-disagg-{uuid.uuid4().hex[:8]}", "restore_wait": a.restore_wait,
            "max_batch": a.max_batch, "max_prefill_tokens": a.max_prefill_tokens, "prompt": a.prompt,
            "output": a.output, "colocated_replicate": a.colocated_replicate == "on",
            "threads": a.threads or (1 if device == "cpu" else 4),
            "kv_blocks": {"colocated": (a.max_batch + 1) * per, "token": (a.max_batch + 1) * per,
                          "prompt": blocks(max(a.max_prefill_tokens, a.prompt), a.block) + per}}


def run(mode: str, roles: list[str], sp: dict, sched: list[dict], timeout: float, envs: dict | None = None) -> dict:
    """The roles as processes (spawned: CUDA does not survive a fork), started together once
    all are ready, each with its envs entry added to its environment; returns each role's
    record. Each mode has a deployment of its own at the holder, so no replica of one run
    meets the other's."""
    sp = {**sp, "deployment": f"{sp['deployment']}-{mode}"}
    ctx = mp.get_context("spawn")
    handoffs = ctx.Queue() if "prompt" in roles else None
    procs, ctls = {}, {}
    for role in roles:
        mine, theirs = ctx.Pipe()
        p = ctx.Process(target=disagg_loops.child, args=(role, sp, sched, theirs, handoffs), name=f"bench-{role}")
        with gpu_split.started_with((envs or {}).get(role, {})):
            p.start()
        procs[role], ctls[role] = p, mine
    try:
        ready = {r: _expect(ctls[r], "ready", timeout, r) for r in roles}
        t0 = time.monotonic() + 0.2
        for r in roles:
            ctls[r].send(t0)
        out = {r: _expect(ctls[r], "done", timeout, r) for r in roles}
        for r in roles:
            out[r]["process"] = ready[r]
        out["t0"] = t0
        return out
    finally:
        for p in procs.values():
            p.join(10)
            if p.is_alive():
                p.kill()
                p.join()


def _expect(ctl, what: str, timeout: float, role: str):
    if not ctl.poll(timeout):
        raise TimeoutError(f"{role}: no {what} in {timeout} s")
    kind, body = ctl.recv()
    if kind == "error":
        raise RuntimeError(body)
    assert kind == what, (kind, what)
    return body


def pct(xs: list[float], q: float) -> float:
    """The q-quantile (0..1) of xs, nearest rank; 0 for none."""
    if not xs:
        return 0.0
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


def summarize(requests: dict, sched: list[dict], t0: float) -> dict:
    """Latency and throughput of one run from its per-request token times."""
    arrival = {r["request"]: t0 + r["arrival"] for r in sched}
    ttft, gaps, tpot, last, tokens = [], [], [], 0.0, 0
    for rid, r in requests.items():
        ts = r["times"]
        ttft.append(ts[0] - arrival[rid])
        gaps += [b - a for a, b in zip(ts, ts[1:])]
        if len(ts) > 1:
            tpot.append((ts[-1] - ts[0]) / (len(ts) - 1))
        last, tokens = max(last, ts[-1]), tokens + len(ts)
    span = last - min(arrival.values())
    ms = lambda xs, q: round(1e3 * pct(xs, q), 3)  # noqa: E731
    return {"requests": len(requests), "output_tokens": tokens, "span_s": round(span, 4),
            "tokens_per_s": round(tokens / span, 3) if span > 0 else 0.0,
            "ttft_ms": {"p50": ms(ttft, .5), "p99": ms(ttft, .99)},
            "tbt_ms": {"p50": ms(gaps, .5), "p99": ms(gaps, .99)},
            "tpot_ms": {"p50": ms(tpot, .5), "p99": ms(tpot, .99)}}


def raw(requests: dict, t0: float) -> dict:
    """Each request's token times in seconds from t0 (the schedule's arrivals are offsets from
    it too): the data the percentiles come from."""
    return {rid: [round(t - t0, 6) for t in r["times"]] for rid, r in requests.items()}


def merged(prompt: dict, token: dict) -> dict:
    """A disaggregated request's tokens: token 0 from the prompt engine, the rest from the token
    engine."""
    out = {}
    for rid, p in prompt["requests"].items():
        t = token["requests"].get(rid, {"times": [], "tokens": []})
        out[rid] = {"times": p["times"] + t["times"], "tokens": p["tokens"] + t["tokens"]}
    return out


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(prog="python3 -m schooner_serve.bench_disagg", description=__doc__.split("\n\n")[0])
    p.add_argument("--smoke", action="store_true",
                   help="the tiny model on the CPU, a few requests: seconds (what CI runs); explicit flags still win")
    p.add_argument("--model", default=None, choices=sorted(CONFIGS))
    p.add_argument("--seed", type=int, default=7, help="model weights, prompts and arrivals")
    p.add_argument("--rate", type=float, default=None, help="mean arrivals per second (Poisson)")
    p.add_argument("--requests", type=int, default=None)
    p.add_argument("--prompt", type=int, default=None, help="prompt tokens per request")
    p.add_argument("--output", type=int, default=None, help="output tokens per request (no stop token)")
    p.add_argument("--max-batch", type=int, default=None, help="sequences in one decode step")
    p.add_argument("--max-prefill-tokens", type=int, default=8192, help="prompt tokens in one prefill")
    p.add_argument("--block", type=int, default=16)
    p.add_argument("--device", default="", help="cpu or cuda[:n]; default cuda when there is one")
    p.add_argument("--dtype", default="", help="float32 or bfloat16; default bf16 on GPU, f32 on CPU")
    p.add_argument("--threads", type=int, default=0, help="torch threads per process (default 1 on CPU, 4 on GPU)")
    p.add_argument("--holder", default="", help="the KV-cache holder's address; default: an in-process FakeHolder")
    p.add_argument("--restore-wait", type=float, default=10.0, help="seconds a token engine's get waits for a prompt")
    p.add_argument("--colocated-replicate", choices=("on", "off"), default="on")
    p.add_argument("--modes", default="colocated,disaggregated")
    p.add_argument("--split", default="time-slice", choices=gpu_split.SPLITS,
                   help="how the disaggregated pools share the GPU (gpu_split.py): time-slice (no MPS), mps "
                        "(one private MPS server, each pool its share of the threads) or green (the same server, "
                        "each pool on a green context of its share of the SMs); the colocated run always has the "
                        "whole GPU")
    p.add_argument("--prompt-share", type=float, default=0.5,
                   help="the prompt pool's share of the GPU with --split mps or green; the token pool gets the rest")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds for each process to get ready, and to finish")
    p.add_argument("--out", default="bench_disagg.json")
    a = p.parse_args(argv)
    defaults = ({"model": "tiny", "rate": 40.0, "requests": 12, "prompt": 48, "output": 8, "max_batch": 8}
                if a.smoke else {"model": "tiny", "rate": 4.0, "requests": 64, "prompt": 512, "output": 64, "max_batch": 32})
    for k, v in defaults.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    if a.smoke and not a.device:
        a.device = "cpu"
    import torch
    a.device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    why = gpu_split.unavailable(a.split, a.device)
    if why:
        p.error(why)
    try:
        sms = torch.cuda.get_device_properties(a.device).multi_processor_count if a.split == "green" else 0
        shares = gpu_split.shares(a.split, a.prompt_share, sms)
    except ValueError as e:
        p.error(str(e))

    holder, fake = a.holder, None
    if not holder:
        from .fake_holder import FakeHolder
        fake = FakeHolder()
        holder = fake.addr
    sp, sched = spec(a, holder), schedule(a)
    modes = [m for m in a.modes.split(",") if m]
    res = {"config": {k: v for k, v in vars(a).items() if k not in ("out",)}, "holder": a.holder or "fake",
           "processes": "one per role, spawned; the disaggregated roles share the device", "device": sp["device"],
           "split": {"kind": a.split, "shares": shares, "colocated": "the whole device, no MPS"}}
    tokens = {}
    try:
        if "colocated" in modes:
            out = run("colocated", ["colocated"], sp, sched, a.timeout)
            res["colocated"] = summarize(out["colocated"]["requests"], sched, out["t0"])
            res["colocated"]["writer"] = out["colocated"].get("writer")
            res["engines"] = {"colocated": out["colocated"]["process"]}
            res.setdefault("raw", {})["colocated"] = raw(out["colocated"]["requests"], out["t0"])
            tokens["colocated"] = {r: x["tokens"] for r, x in out["colocated"]["requests"].items()}
        if "disaggregated" in modes:
            with contextlib.ExitStack() as stack:
                server = stack.enter_context(mps.MpsServer()) if a.split != "time-slice" else None
                envs = {r: gpu_split.role_env(a.split, shares.get(r, {}), server) for r in ("prompt", "token")}
                out = run("disaggregated", ["prompt", "token"], {**sp, "shares": shares}, sched, a.timeout, envs)
            reqs = merged(out["prompt"], out["token"])
            res["disaggregated"] = summarize(reqs, sched, out["t0"])
            te = out["token"]["token_engine"]
            handoff = [out["token"]["admitted"][r] - reqs[r]["times"][0] for r in out["token"]["admitted"]]
            res["disaggregated"]["handoff"] = {
                "restored": te["restored"], "recomputed": te["recomputed"],
                "token0_to_admitted_ms": {"p50": round(1e3 * pct(handoff, .5), 3), "p99": round(1e3 * pct(handoff, .99), 3)},
                "restore_ms": {"p50": pct(te["restore_ms"], .5), "p99": pct(te["restore_ms"], .99)},
                "restores_through": te["through"],
                "prompt_writer": out["prompt"].get("writer"), "token_writer": out["token"].get("writer")}
            tokens["disaggregated"] = {r: x["tokens"] for r, x in reqs.items()}
            res.setdefault("engines", {}).update({r: out[r]["process"] for r in ("prompt", "token")})
            res.setdefault("raw", {})["disaggregated"] = raw(reqs, out["t0"])
    finally:
        if fake is not None:
            fake.close()
    res.setdefault("raw", {})["arrivals"] = {r["request"]: round(r["arrival"], 6) for r in sched}
    if len(tokens) == 2:
        c, d = tokens["colocated"], tokens["disaggregated"]
        res["same_tokens"] = f"{sum(c.get(r) == d.get(r) for r in c)}/{len(c)}"
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    print(table(res), file=sys.stdout, flush=True)
    return res


def table(res: dict) -> str:
    rows = ["mode            tok/s      TTFT p50/p99 ms      TBT p50/p99 ms     TPOT p50/p99 ms"]
    for m in ("colocated", "disaggregated"):
        r = res.get(m)
        if r is None:
            continue
        f = lambda k: f"{r[k]['p50']:.1f}/{r[k]['p99']:.1f}"  # noqa: E731
        rows.append(f"{m:<15} {r['tokens_per_s']:<10.1f} {f('ttft_ms'):<20} {f('tbt_ms'):<18} {f('tpot_ms')}")
    h = res.get("disaggregated", {}).get("handoff")
    if h:
        rows.append(f"hand-offs: {h['restored']} restored, {h['recomputed']} recomputed; restore p50 "
                    f"{h['restore_ms']['p50']:.1f} ms, token 0 to admitted p50 {h['token0_to_admitted_ms']['p50']:.1f} ms")
    if "same_tokens" in res:
        rows.append(f"same tokens as colocated: {res['same_tokens']}")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
