"""One side of a pair in its own process (time-slicing and MPS put the two sides in two
processes). The best-effort side prints {"ready": true} after its warm-up, runs until its
standard input closes (or, with --until-signal, until SIGTERM or SIGINT: how `schooner colocate
run` stops a BE program), then prints its throughput; the latency-critical side runs its
requests and prints their latencies. One JSON line each. `units` runs --warmup units of either
side, then --count units inside the NVTX range that Nsight Compute profiles (counters.py).

  python3 -m schooner_interfere.child be --workload gemm --scale h200
  python3 -m schooner_interfere.child lc --workload decode-chain --request '{"requests":200,...}'
  python3 -m schooner_interfere.child units --workload gemm --count 5 --warmup 3
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

import torch

from . import measure, workloads
from .counters import MEASURED


# The folder that holds this package: a child's working directory and its PYTHONPATH.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def environment(extra: dict | None = None) -> dict:
    """A child's environment: this one, with this package importable, and extra."""
    return dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **(extra or {}))


def command(side: str, workload: str, scale: str, seed: int, device: str, *extra: str) -> list[str]:
    """The command line that runs this module for one side (lc, be or units) of a workload."""
    return [sys.executable, "-m", "schooner_interfere.child", side, "--workload", workload, "--scale", scale,
            "--seed", str(seed), "--device", device, *extra]


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m schooner_interfere.child")
    p.add_argument("side", choices=("lc", "be", "units"))
    p.add_argument("--workload", required=True)
    p.add_argument("--scale", default="h200", choices=sorted(workloads.SCALES))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="")
    p.add_argument("--request", default="{}", help="lc: the study request (requests, warmup, think_ms, seed)")
    p.add_argument("--until-signal", action="store_true", help="be: run until SIGTERM/SIGINT instead of until stdin closes")
    p.add_argument("--timeline", action="store_true",
                   help="lc: also print the measured requests' wall-clock window; be: marks of the work done over time")
    p.add_argument("--count", type=int, default=5, help="units: the units run inside the measured range")
    p.add_argument("--warmup", type=int, default=3, help="units: the units run before it")
    a = p.parse_args(argv)
    device = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    w = workloads.build(a.workload, device, a.scale, a.seed)
    if a.side == "units":
        run_units(w, device, a.count, a.warmup)
        return
    if a.side == "lc":
        print(json.dumps(measure.latency_run(w, json.loads(a.request), device, timeline=a.timeline)), flush=True)
        return
    # A plain flag, not a threading.Event: the handler runs in the main thread between two
    # bytecodes, possibly inside Event.wait while it holds the event's lock, and Event.set
    # would then wait for that lock forever (a CI run hung so, the BE loop running on).
    stopped = []
    if a.until_signal:
        # From the start: a stop during the warm-up or right after "ready" must find them.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stopped.append(True))
    loop = measure.ThroughputLoop(w, device, timeline=a.timeline)
    loop.start()
    loop.ready.wait()
    if loop.error is not None:
        raise SystemExit(f"best-effort {a.workload}: {loop.error}")
    print(json.dumps({"ready": True}), flush=True)
    if a.until_signal:
        while not stopped:
            time.sleep(0.05)  # a signal cuts it short
    else:
        sys.stdin.read()  # the parent closes our stdin to stop us
    print(json.dumps(loop.stop()), flush=True)


def run_units(w, device: torch.device, count: int, warmup: int) -> None:
    """warmup units, then count units inside the NVTX range counters.MEASURED (on a GPU)."""
    cuda = device.type == "cuda"
    for _ in range(warmup):
        w.run()
    if cuda:
        torch.cuda.synchronize(device)
        torch.cuda.nvtx.range_push(MEASURED)
    for _ in range(count):
        w.run()
    if cuda:
        torch.cuda.synchronize(device)
        torch.cuda.nvtx.range_pop()
    print(json.dumps({"units": count, "warmup": warmup}), flush=True)


if __name__ == "__main__":
    main()
