"""How bench_disagg's prompt and token pools share one GPU (issue 24: "prompt and token pools
as separate processes on the one GPU, split by green contexts").

Two processes on one GPU without MPS time-slice it: their kernels never run at the same time,
so a prompt pool's prefill stalls the token pool's decode step whatever the split. A split
that lets both run at once needs the two processes under one MPS server, and then divides
the SMs one of two ways:

  time-slice  no MPS: the driver alternates the two processes' contexts (the default, and
              what the bench measured before this split existed)
  mps         one private MPS server; each process is limited to its share of the SMs'
              threads (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, set before it starts)
  green       the same MPS server, each process running its work on a green context of its
              share of the SMs (torch.cuda.green_contexts, torch 2.11): a hard SM partition
              inside each process

The MPS server gets pipe and log folders of its own, so nothing else on the machine joins it,
and is shut down whatever happens (a Firecracker GPU machine runs MPS; MIG is never touched).
The colocated baseline runs without MPS, on the whole GPU.
"""

from __future__ import annotations

import contextlib
import os

from schooner_interfere import mps

SPLITS = ("time-slice", "mps", "green")


def shares(split: str, prompt_share: float, sms: int = 0) -> dict:
    """Each role's share of the GPU: a thread percentage (mps) or an SM count (green), the
    prompt pool's rounded, the token pool's the rest. sms is the GPU's SM count (green only).
    Raises ValueError for a split that would leave a pool nothing."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: one of {', '.join(SPLITS)}")
    if not 0 < prompt_share < 1:
        raise ValueError(f"--prompt-share must be between 0 and 1 (exclusive), not {prompt_share}")
    if split == "time-slice":
        return {}
    if split == "mps":
        p = round(100 * prompt_share)
        if not 0 < p < 100:
            raise ValueError(f"a prompt share of {prompt_share} leaves a pool 0% of the threads")
        return {"prompt": {"thread_pct": p}, "token": {"thread_pct": 100 - p}}
    # The driver rounds a green context's SM count to its partition granularity (alignment and
    # minimum group size); multiples of 8 keep that rounding from making the two sides overlap.
    p = 8 * round(prompt_share * sms / 8)
    if p < 8 or sms - p < 8:
        raise ValueError(f"a prompt share of {prompt_share} of {sms} SMs leaves a pool fewer than 8")
    return {"prompt": {"sms": p}, "token": {"sms": sms - p}}


def unavailable(split: str, device: str) -> str:
    """Why this machine cannot run the split ("" when it can)."""
    if split == "time-slice":
        return ""
    if not device.startswith("cuda"):
        return f"--split {split} needs a CUDA GPU (the device is {device})"
    if why := mps.unavailable():
        return f"--split {split} needs an MPS server: {why}"
    if split == "green":
        import torch
        if getattr(getattr(torch.cuda, "green_contexts", None), "GreenContext", None) is None:
            return f"--split green needs torch's green contexts (torch 2.11 has them; this is {torch.__version__})"
    return ""


def role_env(split: str, share: dict, server: mps.MpsServer | None) -> dict:
    """The environment a role's process starts with: the MPS server's, and its thread share."""
    if split == "time-slice" or server is None:
        return {}
    env = server.env()
    if "thread_pct" in share:
        env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(share["thread_pct"])
    return env


@contextlib.contextmanager
def started_with(env: dict):
    """os.environ with env added while a spawned process starts (it copies the parent's
    environment then), restored after."""
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def enter_green(stack: contextlib.ExitStack, share: dict, device: str) -> dict:
    """In a role's process: its work from here on runs on a stream of a green context of its
    SMs (nothing for a share without "sms"). Returns what the process runs on, for the record."""
    if "sms" not in share:
        return {}
    import torch
    dev = torch.device(device)
    # The primary context first: a green context made without one had torch create it on the
    # way, and the process's first allocation then failed with "context is destroyed" (H100,
    # torch 2.11, under MPS).
    torch.empty(1, device=dev)
    ctx = torch.cuda.green_contexts.GreenContext.create(num_sms=share["sms"], device_id=dev.index or 0)
    # Held until the stack closes, after its stream's work: a green context nothing refers to is
    # destroyed, and the next allocation on its stream fails ("context is destroyed").
    stack.callback(lambda: ctx)
    stack.enter_context(torch.cuda.stream(ctx.Stream()))
    stack.callback(lambda: torch.cuda.synchronize(dev))  # its work done before the context goes
    return {"green_context_sms": share["sms"]}
