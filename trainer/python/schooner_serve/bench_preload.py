"""The pause at a migration's switch with and without a preload (one stage holding every layer,
in process, against a KV-cache holder).

For each context length × batch size: an old stage prefills `batch` requests of `context` tokens
and decodes `--pre` steps, replicating; a standby preloads every replica (preload.py; its time is
reported but is not part of the pause: the old stage still serves meanwhile); the old stage
decodes `--delta` more steps; then the switch, from the router's resubmit to the next token of
every request (step K), is timed for:
  cold     a fresh stage restores each request's whole replica (today's migration without preload)
  preload  the preloaded stage fetches only the steps since the preload (a get with from_step)
with the bytes each fetched and whether their next tokens equal the old stage's.

  python3 -m schooner_serve.bench_preload --holder unix:/path/kv.sock --contexts 256,1024 --batches 1,8
Without --holder it uses the in-process FakeHolder test double (whose speed then bounds the fetch).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch

from . import preload as preload_mod
from .bench_failover import decode, prefill, prompts, sync
from .config import CONFIGS
from .engine import StageEngine
from .model import StageModel


def run_case(a, cfg, model, holder, context, batch, case):
    dev = model.device
    reserve = context + a.pre + a.delta + 4
    blocks = batch * (-(-reserve // a.block)) + 1
    dep = f"bench-preload-{os.getpid()}-{case}"
    rids = [f"r{i}" for i in range(batch)]

    def engine(replicate=False):
        # The replacements do not replicate here: their step K would land in the replica the
        # other one then fetches.
        return StageEngine(cfg, a.seed, 0, cfg.layers, device=dev, dtype=model.dtype, kv_blocks=blocks,
                           block=a.block, holder=holder, deployment=dep, model=model, replicate=replicate)

    old = engine(replicate=True)
    for r in rids:
        old.begin(r, reserve)
    toks = [prefill(old, rids, prompts(cfg, batch, context, case), 0)]
    for k in range(1, a.pre + 1):
        toks.append(decode(old, rids, context, k, toks[-1]))
    old.writer.flush(60)

    warm = engine()
    t = time.perf_counter()
    pre = preload_mod.preload(warm, a.budget, log=lambda m: print(m, file=sys.stderr, flush=True))
    preload_s = time.perf_counter() - t
    for k in range(a.pre + 1, a.pre + a.delta + 1):
        toks.append(decode(old, rids, context, k, toks[-1]))
    old.writer.flush(60)
    K = a.pre + a.delta + 1

    cold = engine()
    for e in (warm, cold):
        # A worker captures its decode graphs before it listens (worker._capture_graphs), so a
        # standby's first step after the switch replays one: so must the replacements here, or
        # the pause timed is a graph capture (about 80 ms on an H100, 2026-12-06), not the switch.
        if e.graphs is not None:
            e.graphs.prepare([batch], [context + K])
    row = {"context": context, "batch": batch, "pre_steps": a.pre, "delta_steps": a.delta,
           "preload_s": round(preload_s, 6), "preloaded": pre["preloaded"], "preloaded_bytes": pre["bytes"]}
    for name, e in (("cold", cold), ("preload", warm)):
        n0 = len(e.restore_stats)
        sync(dev)
        t = time.perf_counter()
        for r in rids:
            e.restore(r, context + K - 1, reserve)
        got = decode(e, rids, context, K, toks[-1])
        sync(dev)
        row[f"{name}_pause_ms"] = round(1000 * (time.perf_counter() - t), 3)
        stats = e.restore_stats[n0:]
        row[f"{name}_fetch_ms"] = round(1000 * sum(s["total_s"] for s in stats), 3)
        row[f"{name}_bytes"] = sum(s["bytes"] for s in stats)
        row[f"{name}_tokens"] = got
    # The stage that never moved, after the switches (its step K's replica would otherwise be
    # fetched with them).
    want = decode(old, rids, context, K, toks[-1])
    for name in ("cold", "preload"):
        row[f"{name}_tokens_match"] = row.pop(f"{name}_tokens") == want
    for e in (old, warm, cold):
        e.close()
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="tiny")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--contexts", default="256,1024,2048")
    p.add_argument("--batches", default="1,8")
    p.add_argument("--pre", type=int, default=16, help="decode steps before the preload")
    p.add_argument("--delta", type=int, default=8, help="decode steps between the preload and the switch")
    p.add_argument("--budget", type=float, default=30.0, help="the preload's time bound (s)")
    p.add_argument("--repeats", type=int, default=3, help="runs of each case; the JSON keeps every one")
    p.add_argument("--block", type=int, default=16)
    p.add_argument("--device", default="cpu")
    p.add_argument("--holder", default="", help="a KV-cache holder's address; default: the in-process FakeHolder")
    p.add_argument("--out", default="bench_preload.json")
    a = p.parse_args(argv)
    dev = torch.device(a.device)
    cfg = CONFIGS[a.model]
    holder = a.holder
    if not holder:
        from .fake_holder import FakeHolder
        holder = FakeHolder().addr
    model = StageModel(cfg, a.seed, 0, cfg.layers, dev, torch.bfloat16 if dev.type == "cuda" else torch.float32)
    run_case(a, cfg, model, holder, 64, 1, 0)  # warm-up, not reported
    rows, case = [], 0
    for ctx in (int(x) for x in a.contexts.split(",")):
        for b in (int(x) for x in a.batches.split(",")):
            for _ in range(a.repeats):
                case += 1
                rows.append(run_case(a, cfg, model, holder, ctx, b, case))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print("ctx | batch | cold pause ms | preload pause ms | cold bytes | preload bytes | preload s | tokens match")
    for r in rows:
        print(f"{r['context']} | {r['batch']} | {r['cold_pause_ms']:.1f} | {r['preload_pause_ms']:.1f} | "
              f"{r['cold_bytes']} | {r['preload_bytes']} | {r['preload_s']:.3f} | "
              f"{r['cold_tokens_match'] and r['preload_tokens_match']}")
    out = {"model": cfg.to_json(), "device": str(dev), "holder": a.holder or "fake", "torch": torch.__version__,
           "args": vars(a), "rows": rows}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
