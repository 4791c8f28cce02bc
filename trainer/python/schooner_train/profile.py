"""The model profiler: python3 -m schooner_train.profile --name ... --layers ... --out FILE

Measures, on this GPU, the three kinds of planner layer of the decoder (the embedding, one
transformer block, the head with its loss) for every micro-batch size: forward and backward
times with CUDA events around --reps passes run back to back (after --warmup rounds, the
median of 5 rounds), the
fused-Adam update time of the layer's parameters, and memory: parameters, what a forward
keeps for its backward per sample, and for the head the peak of its forward and backward
(its logits and their gradient are the largest short-lived tensors of an iteration). Like
Sailor it profiles one block and repeats it for every block. It writes a planner model
profile (schooner.model-profile/v1, docs/profiles.md) with a memory_model: 16 bytes per
parameter (fp32 weight, gradient and the two Adam moments, as the reference trainer keeps
them) and the framework memory measured once the layers are gone.

Training precision is the reference trainer's: fp32 with TF32 matmuls. TP degrees above 1
need one process per GPU of the group and are not profiled by this version.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import statistics
import sys

import torch

from .arch import Arch, add_arch_args, arch_from_args, int_list
from .model import TP, build_layer

BYTES_PER_PARAM = 16


def _events():
    return [torch.cuda.Event(enable_timing=True) for _ in range(3)]


def _layer_input(kind, arch, mbs, dev, g):
    if kind == "embedding":
        return torch.randint(0, arch.vocab, (mbs, arch.seq_len), device=dev, generator=g)
    return torch.randn(mbs, arch.seq_len, arch.hidden, device=dev, generator=g).requires_grad_()


def measure(layer, kind, arch, mbs, warmup, reps, dev, rounds=5):
    """Median forward and backward seconds, update seconds, kept and peak bytes of one layer.

    A round runs reps forward passes back to back, then their reps backward passes, then
    reps updates, each group between two CUDA events, and divides by reps: as in a model,
    where the CPU queues the next layer's kernels while the GPU runs this one's, launch gaps
    are hidden. Timing one pass at a time, synchronised, would add a launch latency to every
    layer (small layers measured that way looked 25-70% slower than they train). The first
    warmup rounds are left out; the result is the median over rounds.
    """
    g = torch.Generator(device=dev)
    g.manual_seed(mbs)
    targets = torch.randint(0, arch.vocab, (mbs, arch.seq_len), device=dev, generator=g)
    grad_out = torch.randn(mbs, arch.seq_len, arch.hidden, device=dev, generator=g)
    opt = torch.optim.Adam(layer.parameters(), lr=1e-4, fused=True)
    fwd, bwd, upd = [], [], []
    for r in range(max(warmup, 1) + rounds):
        xs = [_layer_input(kind, arch, mbs, dev, g) for _ in range(reps)]
        s, m, e = _events()
        u0, u1, _ = _events()
        torch.cuda.synchronize()
        s.record()
        outs = [layer(x, targets) if kind == "head" else layer(x) for x in xs]
        m.record()
        for out in outs:
            if kind == "head":
                out.backward()
            else:
                out.backward(grad_out)
        e.record()
        u0.record()
        for _ in range(reps):
            opt.step()
        u1.record()
        torch.cuda.synchronize()
        if r >= max(warmup, 1):
            fwd.append(s.elapsed_time(m) / 1e3 / reps)
            bwd.append(m.elapsed_time(e) / 1e3 / reps)
            upd.append(u0.elapsed_time(u1) / 1e3 / reps)
        del outs, xs, out  # out: the loop's last output, which would hide a kept tensor below
    # Memory with gradients and Adam state in place, as in a training iteration.
    x = _layer_input(kind, arch, mbs, dev, g)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated(dev)
    torch.cuda.reset_peak_memory_stats(dev)
    out = layer(x, targets) if kind == "head" else layer(x)
    kept = torch.cuda.memory_allocated(dev) - base
    if kind == "head":
        out.backward()
    else:
        out.backward(grad_out)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated(dev) - base
    del out, x, opt
    return statistics.median(fwd), statistics.median(bwd), statistics.median(upd), kept, peak


def profile(arch: Arch, mbs_list, warmup, reps, gpu_type, dev):
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    kinds = {"embedding": 0, "block": 1, "head": arch.layers + 1}
    times = {}  # mbs -> kind -> {fwd,bwd,update}
    mem = {}
    for kind, index in kinds.items():
        layer = build_layer(arch, index, seed=1, tp=TP(), device=dev)
        params = sum(p.numel() for p in layer.parameters())
        per_sample_kept = per_sample_peak = 0.0
        for mbs in mbs_list:
            f, b, u, kept, peak = measure(layer, kind, arch, mbs, warmup, reps, dev)
            times.setdefault(mbs, {})[kind] = {"fwd": f, "bwd": b, "update": u}
            if mbs == max(mbs_list):
                per_sample_kept, per_sample_peak = kept / mbs, peak / mbs
            print(f"  {kind:9s} mbs {mbs:2d}: fwd {f * 1e3:8.3f} ms  bwd {b * 1e3:8.3f} ms  update {u * 1e3:7.3f} ms  "
                  f"kept {kept / 2**20:8.1f} MiB  peak {peak / 2**20:8.1f} MiB", flush=True)
        # The head's short-lived logits and their gradient exist at the start of the backward
        # pass, when every layer's activations are still held: its share is its peak.
        act = per_sample_peak if kind == "head" else per_sample_kept
        out_floats = arch.seq_len * arch.hidden
        in_floats = arch.seq_len if kind == "embedding" else arch.seq_len * arch.hidden
        mem[kind] = {"params_floats": float(params), "act_output_floats": float(out_floats if kind != "head" else 1),
                     "act_input_floats": float(in_floats), "act_mem_floats": act / 4}
        del layer
        gc.collect()
    torch.cuda.synchronize()
    gc.collect()
    torch.cuda.empty_cache()
    overhead = torch.cuda.memory_allocated(dev)
    order = ["embedding"] + ["block"] * arch.layers + ["head"]
    doc = {
        "format": "schooner.model-profile/v1",
        "architecture": arch.to_json(),
        "name": arch.name,
        "seq_len": arch.seq_len,
        "mem": {"1": [mem[k] for k in order]},
        "compute": {gpu_type: {
            "gpu": gpu_type, "derived": False,
            "source": f"measured: schooner profile model on {torch.cuda.get_device_name(dev)}, torch {torch.__version__}, "
                      f"fp32/TF32, {datetime.date.today().isoformat()}",
            "times": {"1": {str(m): [times[m][k] for k in order] for m in mbs_list}},
        }},
        "memory_model": {"bytes_per_param": BYTES_PER_PARAM, "overhead_bytes": float(overhead)},
    }
    return doc


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m schooner_train.profile", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arch_args(p)
    p.add_argument("--mbs", type=int_list, default=[1, 2, 4], help="micro-batch sizes, e.g. 1,2,4")
    p.add_argument("--tp", type=int_list, default=[1], help="tensor-parallel degrees (this version: 1)")
    p.add_argument("--gpu-type", default="H200-141", help="schooner's name of this GPU type")
    p.add_argument("--warmup", type=int, default=1, help="rounds left out")
    p.add_argument("--reps", type=int, default=10, help="passes per timed round, run back to back")
    p.add_argument("--out", required=True, help="profile file to write")
    a = p.parse_args(argv)
    arch = arch_from_args(a)
    arch.check()
    if a.tp != [1]:
        print(f"profiling TP degrees {a.tp} needs one process per GPU of the group; this version profiles TP 1 only", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("no CUDA GPU: the profiler measures a GPU and needs one", file=sys.stderr)
        return 2
    dev = torch.device("cuda", 0)
    print(f"profiling {arch.name} ({arch.layers} blocks, hidden {arch.hidden}) on {torch.cuda.get_device_name(dev)}, "
          f"micro-batches {a.mbs}", flush=True)
    doc = profile(arch, a.mbs, a.warmup, a.reps, a.gpu_type, dev)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {a.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
