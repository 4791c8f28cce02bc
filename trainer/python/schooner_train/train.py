"""The reference trainer: python3 -m schooner_train.train --name ... --layers ... [--iterations N]

Run one process per GPU (torchrun --nproc-per-node=<PP·DP·TP> for one machine); the plan comes
from SCHOONER_DP, SCHOONER_PP, SCHOONER_TP, SCHOONER_MICRO_BATCH, SCHOONER_GLOBAL_BATCH and the
stage split (see layout.py); SCHOONER_ITERATIONS, SCHOONER_RESTORE_STEP,
SCHOONER_CHECKPOINT_EVERY, SCHOONER_CKPT_SOCKET, SCHOONER_SEED as schooner's command trainer
sets them. Every iteration prints `SCHOONER_PROGRESS {"iteration":N,"last_checkpoint":S}`.
With --measure-out the first process appends one JSON line with the iteration times and each
stage's peak memory (what bench/gpu compares with the planner's simulator).

Training is fp32 with TF32 matmuls and fused Adam, gradients kept between iterations
(zero_grad(set_to_none=False)): 16 bytes per parameter, which the profiler's memory model says.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

from schooner_ckpt import rng

from . import iteration_profile
from . import layout as layout_mod
from .arch import add_arch_args, arch_from_args
from .checkpointing import AgentCheckpoints, AsyncSaveCheckpoints, TorchSaveCheckpoints
from .model import TP, Stage
from .pipeline import Neighbours, loss_sum, one_f_one_b


def _env_int(name, default):
    v = os.environ.get(name, "")
    return int(v) if v not in ("",) else default


def batch(arch, lay, it, seed):
    """The iteration's microbatches of this pipeline: the same global batch whatever the layout."""
    g = torch.Generator()
    g.manual_seed(seed * 7_919 + it)
    ids = torch.randint(0, arch.vocab, (lay.global_batch, arch.seq_len + 1), generator=g)
    per = lay.global_batch // lay.dp
    mine = ids[lay.dp_rank * per:(lay.dp_rank + 1) * per]
    m = lay.micro_batch
    return [mine[i * m:(i + 1) * m] for i in range(lay.microbatches)]


class Groups:
    """The TP and DP process groups of this rank (every rank creates every group, in order)."""

    def __init__(self, lay):
        self.tp = self.dp = None
        if lay.world == 1:
            return
        self.tp = _new_groups(lay, [[lay.rank_of(s, d, t) for t in range(lay.tp)]
                                    for s in range(lay.pp) for d in range(lay.dp)])
        self.dp = _new_groups(lay, [[lay.rank_of(s, d, t) for d in range(lay.dp)]
                                    for s in range(lay.pp) for t in range(lay.tp)])


def _new_groups(lay, groups):
    """Creates a process group of each list of ranks, in order, and returns this rank's (None if none)."""
    mine = None
    for ranks in groups:
        g = dist.new_group(ranks)
        if lay.rank in ranks:
            mine = g
    return mine


def checkpoint_state(stage, opt, stage_index, step):
    """What a stage's checkpoint holds: the model's tensors under their global layer names (so a
    restore under another pipeline split finds them), the optimizer's state under the stage's
    own name (its parameters are numbered per stage, so two stages' would clash), the iteration
    (which is also the data position: a batch is a function of seed and iteration) and, with
    the optimizer (the whole training state), the random generators (schooner_ckpt.rng) under
    the stage's name too: each stage's process has its own, and data-parallel replicas restore
    replica 0's."""
    state = {"model": stage.state_dict(), "iteration": step}
    if opt is not None:
        state["optimizer"] = {f"stage-{stage_index}": opt.state_dict()}
        state["rng"] = {f"stage-{stage_index}": rng.capture()}
    return state


def restore_generators(saved):
    """Puts the saved random generators back. A checkpoint from a machine with another number of
    GPUs holds another number of CUDA generators: those are left as they are (with a warning)
    and the rest restored, rather than failing the restore of everything else."""
    try:
        rng.restore(saved)
    except ValueError as e:
        print(f"restore: {e}; the CUDA generators are left unrestored", file=sys.stderr, flush=True)
        rng.restore({k: v for k, v in saved.items() if k != "cuda"})


def optimizer_of(state, stage_index):
    """The stage's optimizer state in a checkpoint, None when it holds none."""
    saved = state.get("optimizer")
    if saved is None:
        return None
    if "state" in saved and "param_groups" in saved:  # written before stages had their own names
        return saved
    return saved.get(f"stage-{stage_index}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m schooner_train.train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arch_args(p)
    p.add_argument("--iterations", type=int, default=None, help="total iterations (default SCHOONER_ITERATIONS, else 20)")
    p.add_argument("--warmup", type=int, default=3, help="iterations left out of the measured times")
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--measure-out", help="append one JSON line of measurements to this file")
    p.add_argument("--ckpt-state", choices=["full", "model"], default="full",
                   help="what a checkpoint holds: model and optimizer (full) or the model only")
    p.add_argument("--ckpt-mode", choices=["overlap", "blocking"], default="overlap",
                   help="through the agent: copy from the GPU beside the next iteration (overlap) or hold the loop for it (blocking)")
    p.add_argument("--torch-save-dir", help="checkpoint with torch.save into this directory instead of the agent (a baseline)")
    p.add_argument("--async-save-dir", help="checkpoint with torch.distributed.checkpoint.async_save into this directory "
                   "instead of the agent (a baseline; one process)")
    p.add_argument("--verify-restore", action="store_true",
                   help="after the final checkpoint, restore it and check it equals the trainer's state bit for bit "
                        "(reported as restore_verified; a mismatch fails the run)")
    a = p.parse_args(argv)
    arch = arch_from_args(a)
    lay = layout_mod.from_env(arch.planner_layers)
    arch.check(lay.tp)
    iterations = a.iterations if a.iterations is not None else _env_int("SCHOONER_ITERATIONS", 20)
    seed = _env_int("SCHOONER_SEED", 1)
    every = _env_int("SCHOONER_CHECKPOINT_EVERY", 0)
    restore = _env_int("SCHOONER_RESTORE_STEP", -1)

    cuda = torch.cuda.is_available()
    local = _env_int("LOCAL_RANK", 0)
    device = torch.device("cuda", local) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    if a.torch_save_dir and a.async_save_dir:
        raise SystemExit("--torch-save-dir and --async-save-dir are two baselines: give one")
    if lay.world > 1:
        dist.init_process_group("nccl" if cuda else "gloo", rank=lay.rank, world_size=lay.world)
    groups = Groups(lay)
    first, end = lay.stages[lay.stage]
    stage = Stage(arch, first, end, seed, TP(lay.tp, lay.tp_rank, groups.tp), device)
    opt = torch.optim.Adam(stage.parameters(), lr=a.lr, fused=cuda)
    nb = Neighbours(
        prev=lay.rank_of(lay.stage - 1, lay.dp_rank, lay.tp_rank) if lay.stage > 0 else None,
        nxt=lay.rank_of(lay.stage + 1, lay.dp_rank, lay.tp_rank) if lay.stage < lay.pp - 1 else None,
        shape=(lay.micro_batch, arch.seq_len, arch.hidden), device=device)

    saver = lay.dp_rank == 0 and lay.tp_rank == 0
    ckpt = client = method = None
    opt_to_save = opt if a.ckpt_state == "full" else None  # --ckpt-state model: the weights alone

    def state_at(step):
        return checkpoint_state(stage, opt_to_save, lay.stage, step)

    if every > 0 and not (a.torch_save_dir or a.async_save_dir) and os.environ.get("SCHOONER_CKPT_SOCKET"):
        if lay.tp > 1:
            raise SystemExit("checkpointing a TP>1 layout through the agent is not supported by the reference trainer yet")
        import schooner_ckpt
        ckpt = schooner_ckpt
        # Every rank speaks for its pipeline stage: the data-parallel replica 0 saves the
        # stage's shard, and every replica restores from it.
        client = schooner_ckpt.Client(timeout=600)
        client.hello(rank=lay.stage, world=lay.pp)
        if saver:
            method = AgentCheckpoints(client, overlap=a.ckpt_mode == "overlap")
    elif every > 0 and saver and a.torch_save_dir:
        method = TorchSaveCheckpoints(a.torch_save_dir, lay.stage)
    elif every > 0 and saver and a.async_save_dir:
        method = AsyncSaveCheckpoints(a.async_save_dir, stage, opt_to_save)
    start, last_ckpt = 0, -1
    if restore >= 0:
        if ckpt is None:
            raise SystemExit("SCHOONER_RESTORE_STEP needs the checkpoint agent (SCHOONER_CKPT_SOCKET and SCHOONER_CHECKPOINT_EVERY)")
        state = ckpt.load(restore, client=client)
        stage.load_state_dict({k: v.to(device) for k, v in state["model"].items()})
        saved_opt = optimizer_of(state, lay.stage)
        if saved_opt is not None:
            opt.load_state_dict(saved_opt)
        saved_rng = (state.get("rng") or {}).get(f"stage-{lay.stage}")
        if saved_rng is not None:
            restore_generators(saved_rng)
        start = last_ckpt = int(state["iteration"])
    if lay.world > 1:
        dist.barrier()

    times, stalls, losses = [], [], []
    prepare_s = 0.0
    is_report = lay.stage == lay.pp - 1 and lay.dp_rank == 0 and lay.tp_rank == 0
    # The loop times its own stream: an overlapped checkpoint's copy on the side stream is not
    # the iteration's work, and whatever of it the next optimizer step must wait for shows up
    # in that iteration's time.
    sync = torch.cuda.current_stream().synchronize if cuda else (lambda: None)
    profile_steps = iteration_profile.steps_from_env()
    for it in range(start, iterations):
        sync()
        prof = iteration_profile.start(it + 1, profile_steps)
        t0 = time.perf_counter()
        mbs = batch(arch, lay, it, seed)
        inputs = [m[:, :-1].to(device, non_blocking=True) for m in mbs]
        targets = [m[:, 1:].to(device, non_blocking=True) for m in mbs]
        parts = one_f_one_b(stage, nb, lay.pp, lay.stage, inputs, targets, 1.0 / len(mbs))
        if groups.dp is not None and lay.dp > 1:
            for prm in stage.parameters():
                dist.all_reduce(prm.grad, group=groups.dp)
                prm.grad.div_(lay.dp)
        if method is not None:
            method.before_update()
        opt.step()
        opt.zero_grad(set_to_none=False)
        # Read after the step (the copy of the last save is done by then) and before this
        # iteration's save queues its own: see one_f_one_b.
        loss = loss_sum(parts)
        losses.append(loss / len(mbs))
        step = it + 1
        stall = 0.0
        if it == start and method is not None:
            # After the first step the optimizer holds its state: reserve the save buffers and
            # the agent's slots for a full checkpoint now, not at the first save. The time is
            # reported apart and kept out of the iteration's.
            p0 = time.perf_counter()
            method.prepare(state_at(step))
            prepare_s = time.perf_counter() - p0
            t0 += prepare_s
        urgent = ckpt is not None and saver and client.poll()["checkpoint_now"]
        if method is not None and (step % every == 0 or step == iterations or urgent):
            state = state_at(step)
            stall = method.save(state, step, urgent=urgent, final=step == iterations)
            stalls.append(stall)
        if method is not None:
            method.poll()
            last_ckpt = max(last_ckpt, method.last)
        sync()
        dt = time.perf_counter() - t0
        iteration_profile.finish(prof, step, dt)
        if it - start >= a.warmup:
            times.append(dt)
        if lay.tp_rank == 0:
            print("SCHOONER_PROGRESS " + json.dumps({"iteration": step, "last_checkpoint": last_ckpt}), flush=True)
        if is_report and (step % 10 == 0 or step == iterations):
            print(f"iteration {step}/{iterations} loss {loss / len(mbs):.4f} {dt * 1e3:.1f} ms", file=sys.stderr, flush=True)

    peak = torch.cuda.max_memory_allocated(device) if cuda else 0
    verified = None
    if a.verify_restore and lay.world > 1:
        # A step restores once every saving rank has committed its shard: each waited for its
        # own final save, so after this barrier all have.
        dist.barrier()
    if a.verify_restore and method is not None:
        verified = verify_final(method, state_at(iterations), iterations)
    mine = {"stage": lay.stage, "peak": peak, "times": times, "losses": losses, "dp": lay.dp_rank, "tp": lay.tp_rank}
    everyone = [mine]
    if lay.world > 1:
        everyone = [None] * lay.world
        dist.all_gather_object(everyone, mine)
    if a.measure_out and lay.rank == 0:
        per_stage = [max(e["peak"] for e in everyone if e["stage"] == s) for s in range(lay.pp)]
        n = min(len(e["times"]) for e in everyone)
        iters = [max(e["times"][i] for e in everyone) for i in range(n)]
        # The iteration's loss: the mean over the data-parallel pipelines' last stages.
        tails = [e["losses"] for e in everyone if e["stage"] == lay.pp - 1 and e["tp"] == 0]
        mean_loss = [sum(t[i] for t in tails) / len(tails) for i in range(len(tails[0]))]
        rec = {"name": arch.name, "layers": arch.layers, "hidden": arch.hidden, "heads": arch.heads, "ffn": arch.ffn,
               "vocab": arch.vocab, "seq_len": arch.seq_len, "dp": lay.dp, "pp": lay.pp, "tp": lay.tp,
               "micro_batch": lay.micro_batch, "global_batch": lay.global_batch,
               "stages": [{"first": f, "end": e} for f, e in lay.stages],
               "iter_seconds": statistics.median(iters) if iters else None, "iter_seconds_all": iters, "losses": mean_loss,
               "peak_mem_bytes": per_stage, "checkpoint_every": every, "checkpoint_stalls": stalls, "checkpoint_prepare_s": prepare_s,
               "checkpoint": method.name if method is not None else "none", "checkpoint_state": a.ckpt_state,
               **(method.measures() if method is not None else {}),
               "gpu": torch.cuda.get_device_name(device) if cuda else "cpu", "gpu_type": os.environ.get("SCHOONER_GPU_TYPE", "H200-141"),
               "torch": torch.__version__, "params": sum(q.numel() for q in stage.parameters()),
               **(verified or {})}
        with open(a.measure_out, "a") as f:
            f.write(json.dumps(rec) + "\n")
    if method is not None:
        method.close()
    elif client is not None:
        client.close()
    if lay.world > 1:
        dist.barrier()
        dist.destroy_process_group()
    if verified is not None and not verified["restore_verified"]:
        return 1
    return 0


def verify_final(method, state, step):
    """Restores the final checkpoint through the method that wrote it and compares it with the
    trainer's state: the measure record's restore_verified, restore_s and, when they differ,
    restore_differences (printed too)."""
    t0 = time.perf_counter()
    diffs = method.check_restore(state, step)
    took = time.perf_counter() - t0
    for d in diffs:
        print(f"restore of step {step} ({method.name}): {d}", file=sys.stderr, flush=True)
    print(f"restore of step {step} ({method.name}): {'equal bit for bit' if not diffs else 'DIFFERS'} in {took:.1f} s",
          file=sys.stderr, flush=True)
    out = {"restore_verified": not diffs, "restore_s": took}
    if diffs:
        out["restore_differences"] = diffs
    return out


if __name__ == "__main__":
    sys.exit(main())
