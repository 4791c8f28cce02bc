"""Failover micro-benchmark of the inference worker (one stage holding every layer, in process).

For each context length × batch size: prefill `batch` requests of `context` tokens, decode
`--generated` steps while replicating to a KV-cache holder, then lose the stage and time, from the
failure to the next token (step K) of every request (a replacement's model is already loaded;
process start and weight loading are not counted):
  restore    get each request's replica from the holder into a fresh paged pool, one decode step
  reprefill  recompute prompt + generated tokens (one prefill), sample step K
  restart    recompute the prompt and decode the K tokens again
and the steady-state decode step time with replication on and off, beside a plain PyTorch decode
loop of the same model (contiguous cache, fused attention). Prints a table, writes JSON.

  python3 -m schooner_serve.bench_failover --model tiny --contexts 64,256 --batches 1,4
  python3 -m schooner_serve.bench_failover --model 8b --contexts 512,2048 --batches 1,8 --out f.json
  python3 -m schooner_serve.bench_failover --fetch-only --holder unix:/path/kv.sock --fetch-mib 512
times only the fetch of one replica (8B layout: 32 layers, 8 KV heads, head_dim 128, bf16) by the
chunk path and, over a unix socket, the shm path (a memory file per fetch) and the lent path
(memory lent to the holder and page-locked beforehand), plus the host→device copy on CUDA.
Without --holder it starts the Python FakeHolder test double in process (TCP on 127.0.0.1), whose
speed bounds the restore time; pass the Go holder's address to measure the real path.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
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


def free_device(dev) -> None:
    """Give back a dropped engine's device memory before the next one is made: an engine and
    its decode graphs refer to each other, so only the cycle collector frees its KV pool and
    graph pools (the 8k x 8 case ran out of an 80 GB GPU without this)."""
    gc.collect()
    if dev.type == "cuda":
        torch.cuda.empty_cache()


def run_case(a, cfg, model, holder_addr, context, batch, case):
    dev = model.device
    n = a.generated + a.steps + 2  # positions reserved past the prompt
    blocks = batch * (-(-(context + n) // a.block)) + 1

    deployment = f"bench-{os.getpid()}-{case}"  # runs sharing a holder keep apart

    def engine(holder=None):
        return StageEngine(cfg, a.seed, 0, cfg.layers, device=dev, dtype=model.dtype, kv_blocks=blocks,
                           block=a.block, holder=holder, deployment=deployment, model=model)

    def engine_ready(holder=None):
        """A fresh engine whose decode graphs (on a GPU) are captured: as a standby stage, before
        the clock starts."""
        e = engine(holder)
        if e.graphs is not None:
            e.graphs.prepare([batch], [context + 1, context + n])
        return e

    def begun(holder=None):
        """A fresh engine with every request of the case begun."""
        e = engine_ready(holder)
        for r in rids:
            e.begin(r, context + n, params(n))
        return e

    rids = [f"c{case}-r{i}" for i in range(batch)]
    ps = prompts(cfg, batch, context, a.seed + case)
    res = {"context": context, "batch": batch, "generated": a.generated,
           "cuda_graphs": dev.type == "cuda" and os.environ.get("SCHOONER_CUDA_GRAPHS", "1") != "0"}

    # steady state: two engines, replication off and on, decode the same steps alternately (which
    # goes first alternates too), so drift of clocks or host load falls on both alike; the on
    # engine's replica is what the failover restores. The prompts' replicas are drained first
    # (prompt_drain_s: how long that took after the prefill): at 2k x 32 they are 8 GiB, still
    # streaming seconds into the decode steps, and the steps timed then measured that burst
    # (+6.8% and +8.9% on two H100s, with the writer blocked 2-3 s), not the per-step streaming.
    e_off, e_on = begun(None), begun(holder_addr)
    toks_off, toks = [prefill(e_off, rids, ps, 0)], [prefill(e_on, rids, ps, 0)]
    sync(dev)
    t = time.perf_counter()
    e_on.writer.flush(120)
    res["prompt_drain_s"] = time.perf_counter() - t
    t_off, t_on = [], []
    for k in range(1, a.generated + 1):
        order = [(e_off, toks_off, t_off), (e_on, toks, t_on)]
        for e, tk, tl in (order if k % 2 else order[::-1]):
            t = time.perf_counter()
            tk.append(decode(e, rids, context, k, tk[-1]))
            sync(dev)
            tl.append(time.perf_counter() - t)
    window = max(1, min(a.steps, a.generated // 2))  # the last steps, after warm-up
    res["steps_timed"] = window
    res["step_ms_repl_off"] = 1e3 * statistics.median(t_off[-window:])
    res["step_ms_repl_on"] = 1e3 * statistics.median(t_on[-window:])
    same_tokens = toks_off == toks
    del e_off
    t = time.perf_counter()
    res["replica_ok"] = e_on.writer.flush(120)
    res["replica_flush_s"] = time.perf_counter() - t
    res["replication"] = e_on.writer.stats()
    res["kv_bytes_per_step"] = cfg.kv_bytes_per_token(torch.tensor([], dtype=model.dtype).element_size()) * batch
    e_on.close()
    del e_on
    failed_tokens = toks  # steps 0..K-1 delivered, K = generated + 1
    K = a.generated + 1
    gen = [[toks_k[i] for toks_k in failed_tokens] for i in range(batch)]  # per request, steps 0..K-1
    free_device(dev)

    # restore from the replica
    e = engine_ready(holder_addr)
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
    res["restore_lent"] = all(st.get("lent") for st in e.restore_stats)
    # where the restore's time went, summed over the requests: the holder's answer (its copy into
    # the lent memory), the host-to-device copy, the scatter into the paged pool; for a streamed
    # restore, "place" is the part of the fetch the host spent issuing each piece's copy and
    # scatter, over "pieces" pieces and "slot_copies" copies
    res["restore_parts_ms"] = {k: round(1e3 * sum(st.get(f"{k}_s", 0.0) for st in e.restore_stats), 2)
                               for k in ("fetch", "place", "h2d", "scatter", "total")}
    res["restore_pieces"] = sum(st.get("pieces", 0) for st in e.restore_stats)
    res["restore_slot_copies"] = sum(st.get("slot_copies", 0) for st in e.restore_stats)
    e.close()
    del e
    free_device(dev)

    # re-prefill prompt + generated
    e = begun()
    sync(dev)
    t = time.perf_counter()
    nxt_reprefill = prefill(e, rids, [p + g for p, g in zip(ps, gen)], K)
    sync(dev)
    res["reprefill_ms"] = 1e3 * (time.perf_counter() - t)
    del e
    free_device(dev)

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
    # The restart is the reference: it reaches step K through the same prefill and decode steps
    # as the run that failed. The re-prefill computes the generated tokens' cache in one prefill,
    # whose bf16 sums differ from the decode steps' and may flip a near-tied next token.
    res["tokens_match"] = {"restore_vs_reprefill": nxt_restore == nxt_reprefill, "restore_vs_restart": nxt_restore == last,
                           "replication_on_vs_off": same_tokens}
    drop_deployment(holder_addr, deployment)
    free_device(dev)
    res["plain_step_ms"] = plain_step_ms(model, cfg, batch, context, a.steps)
    return res


def drop_deployment(addr: str, deployment: str) -> None:
    """Free the case's replicas in the holder, so later cases have its whole budget."""
    from . import frame
    c = frame.Conn.connect(addr)
    try:
        c.handshake("writer", deployment, 0)
        c.send({"op": "drop_deployment"})
        c.recv()
    finally:
        c.close()


@torch.no_grad()
def plain_step_ms(model: StageModel, cfg: ModelConfig, batch: int, context: int, steps: int) -> float:
    """The median decode step of a plain PyTorch loop over the same model: one contiguous K/V
    tensor per layer ([batch, kv_heads, positions, head_dim], no pages, no block tables), fused
    attention where torch has it, greedy sampling; the baseline of the engine's decode speed.
    The cache holds random values: the step's time does not depend on them."""
    dev, dt = model.device, model.dtype
    L, S = len(model.blocks), context + steps + 1
    shape = (L, batch, cfg.kv_heads, S, cfg.head_dim)
    kc = torch.randn(shape, device=dev, dtype=dt)
    vc = torch.randn(shape, device=dev, dtype=dt)
    groups, scale = cfg.heads // cfg.kv_heads, cfg.head_dim ** -0.5
    sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    gqa = sdpa is not None and tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 5)
    from .model import rope_tables
    tok = torch.zeros(batch, dtype=torch.long, device=dev)
    times = []
    for k in range(steps):
        p = context + k
        t = time.perf_counter()
        cos, sin = rope_tables(cfg, torch.full((batch,), p, device=dev), dev)

        def attend(i, q, kk, vv):
            kc[i, :, :, p] = kk
            vc[i, :, :, p] = vv
            qq = q[:, :, None, :]  # [B, heads, 1, hd]
            if gqa:  # the kernel maps query heads to KV heads: no copy of the cache
                o = sdpa(qq, kc[i, :, :, :p + 1], vc[i, :, :, :p + 1], scale=scale, enable_gqa=True)
                return o.reshape(batch, cfg.heads * cfg.head_dim)
            K = kc[i, :, :, :p + 1].repeat_interleave(groups, dim=1)  # [B, heads, p+1, hd]
            V = vc[i, :, :, :p + 1].repeat_interleave(groups, dim=1)
            if sdpa is not None:
                o = sdpa(qq, K, V, scale=scale)
            else:
                o = torch.softmax((qq @ K.transpose(-1, -2)).float() * scale, -1).to(V.dtype) @ V
            return o.reshape(batch, cfg.heads * cfg.head_dim)

        x = model.embed_tokens(tok) if model.is_first else torch.zeros(batch, cfg.hidden, device=dev, dtype=dt)
        for i in range(L):
            x = model.block_forward(i, x, cos, sin, attend)
        if model.is_last:
            tok = model.logits(x).argmax(-1)
        sync(dev)
        times.append(time.perf_counter() - t)
    del kc, vc
    return 1e3 * statistics.median(times[len(times) // 2:])


def fetch_only(a, dev):
    """Put one replica of --fetch-mib MiB, then time fetching it by chunks and by shm."""
    from . import frame
    from .replicate import LentReader, fetch_replica
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
    unix = a.holder.startswith("unix:")
    modes = [("chunks", False)] + ([("shm", True), ("lent", True)] if unix else [])
    # lent: memory lent to the holder and page-locked before the clock starts, as a stage does
    reader = LentReader(a.holder, dep, 0, nbytes, dev) if unix else None
    for name, shm in modes:
        best = {}
        for _ in range(a.repeats):
            t = time.perf_counter()
            r = reader.fetch(rid) if name == "lent" else fetch_replica(a.holder, dep, 0, rid, shm=shm)
            t_fetch = time.perf_counter() - t
            assert r.shm == shm and r.acked == 0 and r.lent == (name == "lent")
            # the bytes in memory the restore copies from: touch them all (a sum of a strided view)
            t2 = time.perf_counter()
            if dev.type == "cuda":
                if shm:
                    from .engine import host_to_device
                    out = host_to_device(r.buffer, dev, staging, pinned=r.lent and reader.pinned)
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
    if reader is not None:
        reader.close()
    c.send({"op": "drop", "request": rid})
    c.recv()
    c.close()
    return res


def add_case_args(p: argparse.ArgumentParser) -> None:
    """The model and the cases (context lengths × batch sizes, tokens before the failure): the
    failover benchmarks' common arguments."""
    p.add_argument("--model", default="tiny", choices=sorted(CONFIGS))
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--contexts", default="64,256", help="prompt lengths, comma-separated")
    p.add_argument("--batches", default="1,4", help="batch sizes, comma-separated")
    p.add_argument("--generated", type=int, default=32, help="tokens generated before the failure")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_case_args(p)
    p.add_argument("--steps", type=int, default=16,
                   help="decode steps timed for the steady state: the last of --generated (at most half of them)")
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
    # A small case first, not reported: kernels load and the holder's paths warm up before the
    # first timed case (else its re-prefill pays for loading the attention kernels).
    run_case(a, cfg, model, holder, 256, 1, 0)
    rows = []
    case = 0
    for ctx in (int(x) for x in a.contexts.split(",")):
        for b in (int(x) for x in a.batches.split(",")):
            case += 1
            rows.append(run_case(a, cfg, model, holder, ctx, b, case))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    hdr = ("ctx", "batch", "K", "restore ms", "(fetch)", "reprefill ms", "restart ms", "step off ms", "step on ms",
           "overhead", "plain loop ms", "restore = restart", "re-prefill = restore", "replication on = off")
    print(" | ".join(hdr))
    for r in rows:
        print(" | ".join([str(r["context"]), str(r["batch"]), str(r["generated"] + 1), f"{r['restore_ms']:.1f}",
                          f"{r['restore_fetch_ms']:.1f}", f"{r['reprefill_ms']:.1f}", f"{r['restart_ms']:.1f}",
                          f"{r['step_ms_repl_off']:.2f}", f"{r['step_ms_repl_on']:.2f}",
                          f"{100 * (r['step_ms_repl_on'] / r['step_ms_repl_off'] - 1):+.1f}%",
                          f"{r['plain_step_ms']:.2f}",
                          *(str(r["tokens_match"][k]) for k in ("restore_vs_restart", "restore_vs_reprefill",
                                                                 "replication_on_vs_off"))]))
    out = {"model": cfg.to_json(), "device": str(dev), "dtype": str(dtype), "holder": a.holder or "fake",
           "torch": torch.__version__, "rows": rows}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
