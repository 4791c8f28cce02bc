"""Failover micro-benchmark of the inference worker (one stage holding every layer, in process).

For each context length × batch size: prefill `batch` requests of `context` tokens, decode
`--generated` steps while replicating to a KV-cache holder, then lose the stage and time, from the
failure to the next token (step K) of every request (a replacement's model is already loaded;
process start and weight loading are not counted):
  restore    get each request's replica from the holder into a fresh paged pool, one decode step
  reprefill  recompute prompt + generated tokens (one prefill), sample step K
  restart    recompute the prompt and decode the K tokens again
and the steady-state decode step time with replication on and off. Prints a table, writes JSON.

  python3 -m schooner_serve.bench_failover --model tiny --contexts 64,256 --batches 1,4
  python3 -m schooner_serve.bench_failover --model 8b --contexts 512,2048 --batches 1,8 --out f.json
  python3 -m schooner_serve.bench_failover --fetch-only --holder unix:/path/kv.sock --fetch-mib 512
times only the fetch of one replica (8B layout: 32 layers, 8 KV heads, head_dim 128, bf16) by the
chunk path and, over a unix socket, the shm path (plus its host→device copy on CUDA).
Without --holder it starts the Python FakeHolder test double in process (TCP on 127.0.0.1), whose
speed bounds the restore time; pass the Go holder's address to measure the real path.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch

from .config import CONFIGS, ModelConfig
from .engine import StageEngine
from .model import StageModel


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def prompts(cfg: ModelConfig, batch: int, context: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, min(cfg.vocab, 256), (context,), generator=g).tolist() for _ in range(batch)]


def params(n):
    return {"temperature": 0.0, "seed": 0, "max_tokens": n, "stop": [], "reserve": 0}


def prefill(e: StageEngine, rids, seqs, step):
    ents = [{"request": r, "step": step, "positions": [0, len(s)]} for r, s in zip(rids, seqs)]
    return e.sample(ents, e.forward("prefill", ents, [t for s in seqs for t in s]))


def decode(e: StageEngine, rids, plen, k, last):
    ents = [{"request": r, "step": k, "positions": [plen + k - 1, plen + k]} for r in rids]
    return e.sample(ents, e.forward("decode", ents, last))


def run_case(a, cfg, model, holder_addr, context, batch, case):
    dev = model.device
    n = a.generated + a.steps + 2
    blocks = batch * (-(-(context + n) // a.block)) + 1

    def engine(holder=None):
        return StageEngine(cfg, a.seed, 0, cfg.layers, device=dev, dtype=model.dtype, kv_blocks=blocks,
                           block=a.block, holder=holder, deployment=f"bench-{case}", model=model)

    def begun(holder=None):
        """A fresh engine with every request of the case begun."""
        e = engine(holder)
        for r in rids:
            e.begin(r, context + n, params(n))
        return e

    rids = [f"c{case}-r{i}" for i in range(batch)]
    ps = prompts(cfg, batch, context, a.seed + case)
    res = {"context": context, "batch": batch, "generated": a.generated}

    # steady state, replication off then on (the "on" run leaves the replica for the failover)
    for mode in ("off", "on"):
        e = begun(holder_addr if mode == "on" else None)
        toks = [prefill(e, rids, ps, 0)]
        sync(dev)
        times = []
        for k in range(1, a.generated + 1 + (a.steps if mode == "off" else 0)):
            t = time.perf_counter()
            toks.append(decode(e, rids, context, k, toks[-1]))
            sync(dev)
            times.append(time.perf_counter() - t)
        # the steady window: the last `steps` decode steps (after warm-up)
        window = times[-a.steps:]
        res[f"step_ms_repl_{mode}"] = 1e3 * statistics.median(window)
        if mode == "on":
            t = time.perf_counter()
            ok = e.writer.flush(120)
            res["replica_flush_s"] = time.perf_counter() - t
            res["replication"] = e.writer.stats()
            res["replica_ok"] = ok
            res["kv_bytes_per_step"] = cfg.kv_bytes_per_token(torch.tensor([], dtype=model.dtype).element_size()) * batch
            e.writer.close()
            failed_tokens = toks[: a.generated + 1]  # steps 0..K-1 delivered, K = generated + 1
            del e
        else:
            del e
    K = a.generated + 1
    gen = [[toks_k[i] for toks_k in failed_tokens] for i in range(batch)]  # per request, steps 0..K-1
    if dev.type == "cuda":
        torch.cuda.empty_cache()

    # restore from the replica
    e = engine(holder_addr)
    sync(dev)
    t = time.perf_counter()
    for r in rids:
        have = e.restore(r, context + K - 1, context + n, params(n))
        if have < context + K - 1:
            raise SystemExit(f"{r}: the replica holds {have} positions, {context + K - 1} needed")
    t_fetch = time.perf_counter() - t
    nxt_restore = decode(e, rids, context, K, [g[-1] for g in gen])
    sync(dev)
    res["restore_ms"] = 1e3 * (time.perf_counter() - t)
    res["restore_fetch_ms"] = 1e3 * t_fetch
    e.writer.close()
    del e

    # re-prefill prompt + generated
    e = begun()
    sync(dev)
    t = time.perf_counter()
    nxt_reprefill = prefill(e, rids, [p + g for p, g in zip(ps, gen)], K)
    sync(dev)
    res["reprefill_ms"] = 1e3 * (time.perf_counter() - t)
    del e

    # restart: prompt again, then the K tokens again
    e = begun()
    sync(dev)
    t = time.perf_counter()
    last = prefill(e, rids, ps, 0)
    for k in range(1, K + 1):
        last = decode(e, rids, context, k, last)
    sync(dev)
    res["restart_ms"] = 1e3 * (time.perf_counter() - t)
    del e
    res["tokens_match"] = {"restore_vs_reprefill": nxt_restore == nxt_reprefill, "restore_vs_restart": nxt_restore == last}
    return res


def fetch_only(a, dev):
    """Put one replica of --fetch-mib MiB, then time fetching it by chunks and by shm."""
    from . import frame
    from .replicate import fetch_replica
    layers, kvh, hd = 32, 8, 128
    per_tok = layers * 2 * kvh * hd * 2
    T = max(1, (a.fetch_mib << 20) // per_tok)
    dep, rid = "bench-fetch", "fetch-r0"
    c = frame.Conn.connect(a.holder)
    c.handshake("writer", dep, 0)
    c.send({"op": "drop", "request": rid})
    c.recv()
    g = torch.Generator().manual_seed(1)
    for l in range(layers):
        kv = torch.randint(-2**15, 2**15, (2, kvh, T, hd), dtype=torch.int16, generator=g).view(torch.bfloat16)
        h = {"op": "put", "request": rid, "kind": "prompt", "layer": l, "tokens": [0, T], "dtype": "bf16",
             "shape": list(kv.shape)}
        if l == layers - 1:
            h.update({"last": True, "layers": [0, layers], "step": 0})
        c.send(h, frame.tensor_bytes(kv))
        ack, _ = c.recv()
        if ack["op"] != "ack":
            raise SystemExit(f"holder refused the replica: {ack}")
    nbytes = T * per_tok
    res = {"bytes": nbytes, "tokens": T, "holder": a.holder, "device": str(dev)}
    staging: list = []
    modes = [("chunks", False)] + ([("shm", True)] if a.holder.startswith("unix:") else [])
    for name, shm in modes:
        best = {}
        for _ in range(a.repeats):
            t = time.perf_counter()
            r = fetch_replica(a.holder, dep, 0, rid, shm=shm)
            t_fetch = time.perf_counter() - t
            assert r.shm == shm and r.acked == 0
            # the bytes in memory the restore copies from: touch them all (a sum of a strided view)
            t2 = time.perf_counter()
            if dev.type == "cuda":
                if shm:
                    from .engine import host_to_device
                    out = host_to_device(r.buffer, dev, staging)
                else:
                    out = [x.to(dev, non_blocking=False) for _, _, x in r.chunks]
                sync(dev)
            else:
                dst = torch.empty(nbytes, dtype=torch.uint8)
                o = 0
                for _, _, x in r.chunks:
                    n = x.numel() * x.element_size()
                    dst[o:o + n].copy_(x.reshape(-1).view(torch.uint8))
                    o += n
                out = dst
            t_copy = time.perf_counter() - t2
            del out
            r.close()
            for k, v in (("fetch_s", t_fetch), ("copy_s", t_copy), ("total_s", t_fetch + t_copy)):
                best[k] = min(best.get(k, v), v)
        res[name] = {**{k: round(v, 4) for k, v in best.items()},
                     "fetch_GBps": round(nbytes / best["fetch_s"] / 1e9, 2),
                     "total_GBps": round(nbytes / best["total_s"] / 1e9, 2)}
        print(f"{name:6s} fetch {best['fetch_s'] * 1e3:8.1f} ms ({res[name]['fetch_GBps']:6.2f} GB/s)   "
              f"+ copy to {'device' if dev.type == 'cuda' else 'memory'} {best['copy_s'] * 1e3:8.1f} ms   "
              f"total {res[name]['total_GBps']:6.2f} GB/s", flush=True)
    c.send({"op": "drop", "request": rid})
    c.recv()
    c.close()
    return res


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="tiny", choices=sorted(CONFIGS))
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--contexts", default="64,256", help="prompt lengths, comma-separated")
    p.add_argument("--batches", default="1,4", help="batch sizes, comma-separated")
    p.add_argument("--generated", type=int, default=32, help="tokens generated before the failure")
    p.add_argument("--steps", type=int, default=20, help="decode steps timed for the steady state")
    p.add_argument("--block", type=int, default=16)
    p.add_argument("--device", default="")
    p.add_argument("--dtype", default="", help="float32 | bfloat16 (default bf16 on GPU, f32 on CPU)")
    p.add_argument("--holder", default="", help="a KV-cache holder's address; default: the in-process FakeHolder")
    p.add_argument("--out", default="bench_failover.json")
    p.add_argument("--fetch-only", action="store_true", help="time only fetching one replica (needs --holder)")
    p.add_argument("--fetch-mib", type=int, default=512, help="--fetch-only: the replica's size in MiB")
    p.add_argument("--repeats", type=int, default=3, help="--fetch-only: best of this many fetches")
    a = p.parse_args(argv)
    dev = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if a.fetch_only:
        if not a.holder:
            raise SystemExit("--fetch-only needs --holder (a Go holder; unix:PATH for the shm path)")
        res = fetch_only(a, dev)
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
        return
    dtype = getattr(torch, a.dtype) if a.dtype else (torch.bfloat16 if dev.type == "cuda" else torch.float32)
    cfg = CONFIGS[a.model]
    holder = a.holder
    if not holder:
        from .fake_holder import FakeHolder
        holder = FakeHolder().addr
    t = time.perf_counter()
    model = StageModel(cfg, a.seed, 0, cfg.layers, dev, dtype)
    sync(dev)
    print(f"{cfg.name}: {cfg.params() / 1e9:.2f} B parameters on {dev} ({dtype}), built in "
          f"{time.perf_counter() - t:.1f} s; holder {holder}{'' if a.holder else ' (FakeHolder test double)'}",
          file=sys.stderr, flush=True)
    rows = []
    case = 0
    for ctx in (int(x) for x in a.contexts.split(",")):
        for b in (int(x) for x in a.batches.split(",")):
            case += 1
            rows.append(run_case(a, cfg, model, holder, ctx, b, case))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    hdr = ("ctx", "batch", "K", "restore ms", "(fetch)", "reprefill ms", "restart ms", "step off ms", "step on ms",
           "overhead", "match")
    print(" | ".join(hdr))
    for r in rows:
        print(" | ".join([str(r["context"]), str(r["batch"]), str(r["generated"] + 1), f"{r['restore_ms']:.1f}",
                          f"{r['restore_fetch_ms']:.1f}", f"{r['reprefill_ms']:.1f}", f"{r['restart_ms']:.1f}",
                          f"{r['step_ms_repl_off']:.2f}", f"{r['step_ms_repl_on']:.2f}",
                          f"{100 * (r['step_ms_repl_on'] / r['step_ms_repl_off'] - 1):+.1f}%",
                          str(all(r["tokens_match"].values()))]))
    out = {"model": cfg.to_json(), "device": str(dev), "dtype": str(dtype), "holder": a.holder or "fake",
           "torch": torch.__version__, "rows": rows}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
