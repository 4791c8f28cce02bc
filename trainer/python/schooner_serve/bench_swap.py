"""Microbatch swapping against none, each at the largest batch it fits, on one device.

What is emulated: one stage of a pipeline of --depth stages in its steady state, whose GPU has
--kv-gib for KV caches. The pipeline keeps --depth microbatches in flight, each at a different
stage; a stage computes one microbatch per step and a request's next token comes every --depth
steps. On one device the bench runs the whole model as one engine (microbatch.Microbatches: one
microbatch a step, round robin), with a KV pool of --kv-gib: the stages of a balanced pipeline
each hold the same share of every request's KV, so one stage's pool against its share is the
whole pool against the whole cache. Everything a stage does per step is here (its compute over
the microbatch, and with swapping its copies over its own PCIe link); the steps of the other
stages, which a pipeline runs at the same time on other GPUs, are here one after another, so
tokens/s is 1/depth and time between tokens depth times a real pipeline's, alike in both modes.

  off   no swapping: every microbatch in flight has its KV in the pool, reserved whole at
        admission (prompt + output): microbatches of m0 = pool / (depth × reservation)
  on    swapping (swap.py): the pool needs the microbatch computing and the one being swapped
        in beside it: microbatches of up to m1 = pool / (2 × reservation), the rest in pinned
        host memory. A larger microbatch amortises the weights' read over more tokens; the
        price is the swap-in of each microbatch's whole context per step it is not resident,
        over PCIe, overlapped with the step before. --swap-sizes adds smaller microbatches (the
        pool then holds more of them and fewer swap: most-recently-used eviction).

The same requests (seeded random prompts of --prompt tokens, --output tokens each, greedy, all
present at the start: a closed batch, DéjàVu's throughput setting) run in each; request i is
the same in both, so the tokens of the requests both ran are compared. Reports tokens/s (output
tokens over the whole run, prefills included), TTFT, time between tokens (every gap from token 1
on: decoding, without the closed batch's start) and TPOT (a request's mean gap after token 0),
p50 and p99, the decode step's time, and the swap counters.

  python3 -m schooner_serve.bench_swap --smoke                         # tiny model, CPU, seconds
  python3 -m schooner_serve.bench_swap --model 8b --depth 4 --prompt 512 --output 128 --kv-gib 8 \\
      --out swap.json
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
import weakref

import torch

from . import gcpause
from .bench_disagg import pct
from .config import CONFIGS
from .engine import StageEngine
from .microbatch import Microbatches

clock = time.perf_counter


def sizes(a, per_block: int) -> dict:
    """The pool in blocks, a request's reservation in blocks, and the largest microbatch each
    mode fits (0: not even one request per microbatch)."""
    pool = int(a.kv_gib * (1 << 30)) // per_block
    res = -(-(a.prompt + a.output) // a.block)
    m0 = pool // (a.depth * res)
    m1 = pool // (2 * res)
    if a.host_gib:
        m1 = min(m1, int(a.host_gib * (1 << 30)) // (a.depth * (a.prompt + a.output) * (per_block // a.block)))
    return {"pool_blocks": pool, "reserve_blocks": res, "off": min(m0, a.max_microbatch),
            "on": min(m1, a.max_microbatch)}


def make_requests(a, n: int) -> list[dict]:
    vocab = min(CONFIGS[a.model].vocab, 256)
    out = []
    for i in range(n):
        rnd = random.Random(a.seed * 1_000_003 + i)
        out.append({"request": f"r{i}", "prompt": [rnd.randrange(vocab) for _ in range(a.prompt)],
                    "max_tokens": a.output, "temperature": 0.0, "seed": 0, "stop": []})
    return out


def serve(engine: StageEngine, reqs: list[dict], count: int, size: int, sync, each_step: bool = False) -> dict:
    """The closed batch through Microbatches; per request, the time of each token and the
    tokens. A token's time is when the host has it, as the serving worker would send it: the
    step's compute is done. Swap-ins for the next step may still be copying then; each_step
    waits for the whole device after every step as well (how this bench timed until
    2026-12-07), so a step's time also holds the next step's prefetch."""
    rec = {r["request"]: {"times": [], "tokens": []} for r in reqs}
    mb = Microbatches(engine, count, size)
    steps, starts = [], []
    for g, group in enumerate(mb.admit(reqs)):
        if group:
            for r, t in zip(group, mb.prefill(g, group)):
                rec[r["request"]]["times"].append(clock())
                rec[r["request"]]["tokens"].append(t)
    while len(mb):
        t0 = clock()
        out = mb.step()
        if each_step:
            sync()
        t1 = clock()
        steps.append(t1 - t0)
        starts.append(t0)
        for r, _k, t, _done in out:
            rec[r]["times"].append(t1)
            rec[r]["tokens"].append(t)
    sync()
    return {"requests": rec, "decode_steps": steps, "step_starts": starts}


def summarize(run: dict, t0: float, pauses=None) -> dict:
    ttft, gaps, tpot, last, tokens = [], [], [], t0, 0
    for r in run["requests"].values():
        ts = r["times"]
        ttft.append(ts[0] - t0)
        # Decode-phase gaps (token 1 on): the gap after token 0 holds the other microbatches'
        # prefills, a start-up of the closed batch; TPOT keeps it, as vLLM counts.
        gaps += [b - a for a, b in zip(ts[1:], ts[2:])]
        if len(ts) > 1:
            tpot.append((ts[-1] - ts[0]) / (len(ts) - 1))
        last, tokens = max(last, ts[-1]), tokens + len(ts)
    ms = lambda xs, q: round(1e3 * pct(xs, q), 3)  # noqa: E731
    span = last - t0
    st = run["decode_steps"]
    return {"output_tokens": tokens, "span_s": round(span, 4), "tokens_per_s": round(tokens / span, 3),
            "ttft_ms": {"p50": ms(ttft, .5), "p99": ms(ttft, .99)},
            "tbt_ms": {"p50": ms(gaps, .5), "p99": ms(gaps, .99)},
            "tpot_ms": {"p50": ms(tpot, .5), "p99": ms(tpot, .99)},
            "decode_step_ms": {"p50": ms(st, .5), "p99": ms(st, .99),
                               "mean": round(1e3 * sum(st) / max(1, len(st)), 3),
                               "max": round(1e3 * max(st, default=0.0), 3),
                               # A gap between tokens spans a round of `depth` steps, so one slow
                               # step lengthens a gap of every request: a handful of them set the
                               # TBT p99. How many took over 1.5x the median, and their extra time.
                               "slow": slow_steps(st, 1.5, run.get("step_starts"), pauses)}}


def slow_steps(st: list[float], over: float, starts: list[float] | None = None, pauses=None) -> dict:
    """Steps longer than over × the median step: how many, their time beyond the median, which
    steps (the first 64, to see a period) and, given the steps' start times and the collector's
    pauses, how many of them had a generation 1 or 2 collection begin inside."""
    if not st:
        return {"count": 0, "extra_ms": 0.0, "at": []}
    med = pct(st, .5)
    at = [i for i, x in enumerate(st) if x > over * med]
    out = {"count": len(at), "extra_ms": round(1e3 * sum(st[i] - med for i in at), 3), "at": at[:64]}
    if starts is not None and pauses is not None:
        out["with_collection"] = sum(pauses.inside(starts[i], starts[i] + st[i]) for i in at)
    return out


def allocator_counts(dev) -> dict:
    """The CUDA caching allocator's device-level calls so far (empty off CUDA)."""
    if dev.type != "cuda":
        return {}
    st = torch.cuda.memory_stats(dev)
    return {k: int(st.get(k, 0)) for k in ("num_device_alloc", "num_device_free", "num_alloc_retries", "num_sync_all_streams")}


def run_mode(a, model, swap: bool, m: int, sz: dict) -> dict:
    """One mode at microbatch size m: an engine over the shared weights, a warm-up (one
    microbatch through prefill and a few decode steps, decode graphs captured), then the timed
    closed batch of depth × m requests."""
    c = CONFIGS[a.model]
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    sync = (lambda: torch.cuda.synchronize(dev)) if cuda else (lambda: None)
    host = 0
    if swap:
        per_pos = c.kv_bytes_per_token(model.blocks[0].wq.element_size())
        host = (a.depth * m + m) * (a.prompt + a.output + a.block) * per_pos  # the batch and the warm-up's
    engine = StageEngine(c, a.seed, 0, c.layers, device=dev, dtype=model.dtype, kv_blocks=sz["pool_blocks"],
                         block=a.block, model=model, swap_host=host or None)
    if engine.graphs is not None:
        ctx = [a.prompt + 1 + k for k in range(0, a.output, max(1, a.output // 8))] + [a.prompt + a.output]
        engine.graphs.prepare([m], ctx)
    warm = make_requests(a, m)
    for r in warm:
        r["request"], r["max_tokens"] = "warm-" + r["request"], min(4, a.output)
    serve(engine, warm, 1, m, sync)
    if swap:
        for k in engine.swap.stats:
            engine.swap.stats[k] = type(engine.swap.stats[k])(0)
    reqs = make_requests(a, a.depth * m)
    if not a.no_gc_freeze:
        gcpause.freeze()  # as the serving worker does after its warm-up
    sync()
    pauses = gcpause.Pauses().install()
    alloc0 = allocator_counts(dev)
    t0 = clock()
    out = serve(engine, reqs, a.depth, m, sync, each_step=a.sync_steps)
    pauses.remove()
    res = {"swap": swap, "microbatch": m, "batch": len(reqs), **summarize(out, t0, pauses), "gc": pauses.summary()}
    if alloc0:
        # cudaMalloc/cudaFree calls and retries during the timed batch: each can stall a step
        # (a retry frees the cache and synchronises the device).
        res["allocator"] = {k: v - alloc0[k] for k, v in allocator_counts(dev).items()}
    if swap:
        res["swap_stats"] = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in engine.swap.stats.items()}
        res["host_gib"] = round(host / (1 << 30), 3)
    res["tokens"] = {r: x["tokens"] for r, x in out["requests"].items()}
    engine.close()
    # The decode graphs hold the engine (a cycle): collect it, so its KV pool is free before the
    # next mode makes its own (frozen, the cycle would never be collected).
    freed = weakref.ref(engine)
    del engine
    gc.unfreeze()
    gc.collect()
    # Checked here rather than by gc.get_freeze_count(): Python 3.12's collector moves
    # immortal objects to the permanent generation, so that count is not 0 after unfreeze.
    res["gc"]["engine_freed"] = freed() is None
    if cuda:
        torch.cuda.empty_cache()
    return res


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(prog="python3 -m schooner_serve.bench_swap", description=__doc__.split("\n\n")[0])
    p.add_argument("--smoke", action="store_true",
                   help="the tiny model on the CPU, small sizes: seconds (what CI runs)")
    p.add_argument("--model", default="tiny", choices=sorted(CONFIGS))
    p.add_argument("--seed", type=int, default=7, help="model weights and prompts")
    p.add_argument("--depth", type=int, default=4, help="pipeline stages emulated: microbatches in flight")
    p.add_argument("--prompt", type=int, default=512, help="prompt tokens per request")
    p.add_argument("--output", type=int, default=128, help="output tokens per request (no stop token)")
    p.add_argument("--kv-gib", type=float, default=8.0, help="the GPU KV pool (one stage's, against its share)")
    p.add_argument("--host-gib", type=float, default=0.0, help="cap on the pinned host pool (0: what the batch needs)")
    p.add_argument("--max-microbatch", type=int, default=256, help="cap on either mode's microbatch")
    p.add_argument("--swap-sizes", default="", help="more microbatch sizes to run with swapping (comma-separated)")
    p.add_argument("--off-sizes", default="", help="more (smaller) microbatch sizes to run without swapping")
    p.add_argument("--tbt-target-ms", type=float, default=0.0,
                   help="a latency target on the time between tokens' p99 (this emulation's: depth times a real "
                        "pipeline's): each mode's best tokens/s among its runs that meet it, and their ratio")
    p.add_argument("--sync-steps", action="store_true",
                   help="wait for the whole device after each decode step, swap-ins for the next step included "
                        "(how this bench timed until 2026-12-07); by default a token counts once the host has it")
    p.add_argument("--no-gc-freeze", action="store_true",
                   help="leave Python's collector walking the warm-up's objects (the worker freezes them, "
                        "gcpause.py; since 2026-12-07)")
    p.add_argument("--block", type=int, default=16)
    p.add_argument("--device", default="", help="cpu or cuda[:n]; default cuda when there is one")
    p.add_argument("--dtype", default="", help="float32 or bfloat16; default bf16 on GPU, f32 on CPU")
    p.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's)")
    p.add_argument("--out", default="bench_swap.json")
    a = p.parse_args(argv)
    if a.smoke:
        a.model, a.prompt, a.output, a.depth = "tiny", 24, 6, 4
        a.device = a.device or "cpu"
        # 16 blocks of 16 positions, 2 per request: microbatches of 2 without swapping, 4 with.
        a.kv_gib, a.block = 16 * 16 * CONFIGS["tiny"].kv_bytes_per_token(4) / (1 << 30), 16
    a.device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if a.threads:
        torch.set_num_threads(a.threads)
    c = CONFIGS[a.model]
    dev = torch.device(a.device)
    dtype = getattr(torch, a.dtype) if a.dtype else (torch.bfloat16 if dev.type == "cuda" else torch.float32)
    from .model import StageModel
    model = StageModel(c, a.seed, 0, c.layers, dev, dtype)
    esize = torch.tensor([], dtype=dtype).element_size()
    sz = sizes(a, c.kv_bytes_per_token(esize) * a.block)
    res = {"config": {k: v for k, v in vars(a).items() if k != "out"}, "device": str(dev), "dtype": str(dtype),
           "torch": torch.__version__, "sizes": sz, "runs": []}
    if dev.type == "cuda":
        res["gpu"] = torch.cuda.get_device_name(dev)
    plan = []
    if sz["off"] > 0:
        offs = sorted({int(x) for x in a.off_sizes.split(",") if x.strip()} - {sz["off"]}, reverse=True)
        plan += [(False, m) for m in [sz["off"]] + offs if 0 < m <= sz["off"]]
    else:
        res["off_does_not_fit"] = (f"{a.depth} microbatches of one request of {a.prompt + a.output} positions need "
                                   f"{a.depth * sz['reserve_blocks']} blocks; the pool has {sz['pool_blocks']}")
    extra = sorted({int(x) for x in a.swap_sizes.split(",") if x.strip()} - {sz["on"]}, reverse=True)
    plan += [(True, m) for m in [sz["on"]] + extra if m > 0]
    for swap, m in plan:
        r = run_mode(a, model, swap, m, sz)
        res["runs"].append(r)
        print(line(r), file=sys.stderr, flush=True)
    # Request i is the same request in every run: compare the ones each pair ran.
    base = res["runs"][0]["tokens"] if res["runs"] else {}
    for r in res["runs"][1:]:
        common = [k for k in r["tokens"] if k in base]
        r["same_tokens_as_first"] = f"{sum(r['tokens'][k] == base[k] for k in common)}/{len(common)}"
    if sz["on"] > 0 and res["runs"]:
        # The exact check, on any device: the largest swapping run's batch again without
        # swapping, on a GPU pool large enough to hold it (bf16 GEMMs of other batch shapes
        # round differently, so against the runs above tokens may differ); not timed.
        on = next(r for r in res["runs"] if r["swap"])
        big = dict(sz, pool_blocks=(a.depth + 1) * sz["on"] * sz["reserve_blocks"])
        ref = run_mode(a, model, False, sz["on"], big)
        common = [k for k in on["tokens"] if k in ref["tokens"]]
        on["same_tokens_as_unswapped_reference"] = f"{sum(on['tokens'][k] == ref['tokens'][k] for k in common)}/{len(common)}"
        res["reference"] = {"microbatch": sz["on"], "pool_blocks": big["pool_blocks"]}
    for r in res["runs"]:
        r.pop("tokens")
    off = next((r for r in res["runs"] if not r["swap"]), None)
    on = next((r for r in res["runs"] if r["swap"]), None)
    if off and on:
        res["speedup_largest"] = round(on["tokens_per_s"] / off["tokens_per_s"], 3)
    if a.tbt_target_ms > 0:
        res["at_target"] = at_target(res["runs"], a.tbt_target_ms)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    print(table(res), flush=True)
    return res


def at_target(runs: list[dict], target_ms: float) -> dict:
    """Each mode's run with the most tokens/s among those whose time between tokens meets the
    target at p99 (None where none does), and the ratio when both have one."""
    best = {}
    for mode, swap in (("off", False), ("on", True)):
        ok = [r for r in runs if r["swap"] == swap and r["tbt_ms"]["p99"] <= target_ms]
        r = max(ok, key=lambda r: r["tokens_per_s"], default=None)
        best[mode] = None if r is None else {"microbatch": r["microbatch"], "tokens_per_s": r["tokens_per_s"],
                                              "tbt_p99_ms": r["tbt_ms"]["p99"]}
    out = {"tbt_p99_target_ms": target_ms, **best}
    if best["off"] and best["on"]:
        out["speedup"] = round(best["on"]["tokens_per_s"] / best["off"]["tokens_per_s"], 3)
    return out


def line(r: dict) -> str:
    f = lambda k: f"{r[k]['p50']:.1f}/{r[k]['p99']:.1f}"  # noqa: E731
    return (f"{'on' if r['swap'] else 'off':<5} {r['microbatch']:<6} {r['batch']:<6} {r['tokens_per_s']:<10.1f} "
            f"{f('ttft_ms'):<18} {f('tbt_ms'):<16} {f('tpot_ms'):<16} {r['decode_step_ms']['mean']:.2f}")


def table(res: dict) -> str:
    sz = res["sizes"]
    rows = [f"pool {sz['pool_blocks']} blocks, {sz['reserve_blocks']} per request; largest microbatch: "
            f"off {sz['off']}, on {sz['on']} (depth {res['config']['depth']})",
            "swap  mb     batch  tok/s      TTFT p50/p99 ms    TBT p50/p99 ms   TPOT p50/p99 ms  step ms"]
    rows += [line(r) for r in res["runs"]]
    for r in res["runs"]:
        if "swap_stats" in r:
            s = r["swap_stats"]
            rows.append(f"mb {r['microbatch']}: {s['swap_ins']} swap-ins ({s['in_bytes'] / (1 << 20):.1f} MiB), "
                        f"{s['evictions']} evictions ({s['out_bytes'] / (1 << 20):.1f} MiB out), {s['prefetches']} "
                        f"prefetches, {s['prefetch_skipped']} skipped")
        if "same_tokens_as_first" in r:
            rows.append(f"mb {r['microbatch']} ({'on' if r['swap'] else 'off'}): same tokens as the first run: "
                        f"{r['same_tokens_as_first']} (other batch shapes: exact in f32, not in bf16)")
        if "same_tokens_as_unswapped_reference" in r:
            rows.append(f"mb {r['microbatch']} (on): same tokens as the same batch unswapped on a larger pool "
                        f"(exact): {r['same_tokens_as_unswapped_reference']}")
    if "speedup_largest" in res:
        rows.append(f"tokens/s with swapping against without, each at its largest: {res['speedup_largest']}x")
    t = res.get("at_target")
    if t:
        def f(m):
            return "none meets it" if t[m] is None else f"mb {t[m]['microbatch']}, {t[m]['tokens_per_s']:.1f} tok/s"
        rows.append(f"at TBT p99 <= {t['tbt_p99_target_ms']:g} ms: off {f('off')}; on {f('on')}"
                    + (f"; {t['speedup']}x" if "speedup" in t else ""))
    if "off_does_not_fit" in res:
        rows.append(f"without swapping nothing fits: {res['off_does_not_fit']}")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
