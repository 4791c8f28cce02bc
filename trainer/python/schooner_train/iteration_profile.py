"""A CUDA and host profile of chosen iterations, for finding where an iteration's time went (the
iteration after an overlapped checkpoint's save, say, which both streams share).

SCHOONER_PROFILE_STEPS="11,12" profiles the iterations that end at those steps: a table of the
operations by their own CUDA time and by host time on stderr, and, with SCHOONER_PROFILE_DIR, a
Chrome trace per iteration (open it in Perfetto or chrome://tracing). Nothing is profiled when
the variable is unset.
"""

import os
import sys
from typing import Any, Optional, Set


def steps_from_env() -> Set[int]:
    raw = os.environ.get("SCHOONER_PROFILE_STEPS", "")
    try:
        return {int(s) for s in raw.split(",") if s.strip()}
    except ValueError:
        raise SystemExit(f"SCHOONER_PROFILE_STEPS must be whole steps separated by commas, not {raw!r}")


def start(step: int, steps: Set[int]) -> Optional[Any]:
    """A started profiler when step is one to profile, else None."""
    if step not in steps:
        return None
    import torch

    acts = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    prof = torch.profiler.profile(activities=acts)
    prof.start()
    return prof


def finish(prof: Optional[Any], step: int, seconds: float) -> None:
    """Stops prof (if any) and reports it."""
    if prof is None:
        return
    prof.stop()
    avgs = prof.key_averages()
    print(f"== profile of the iteration ending at step {step}: {seconds * 1e3:.1f} ms", file=sys.stderr)
    for key in ("self_cuda_time_total", "cpu_time_total"):
        try:
            print(avgs.table(sort_by=key, row_limit=20), file=sys.stderr)
        except (KeyError, AttributeError, RuntimeError):  # a torch without this column, or no CUDA
            continue
    out = os.environ.get("SCHOONER_PROFILE_DIR")
    if out:
        os.makedirs(out, exist_ok=True)
        prof.export_chrome_trace(os.path.join(out, f"step-{step}.json"))
    sys.stderr.flush()
