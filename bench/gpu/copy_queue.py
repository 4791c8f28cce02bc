"""How long the training stream's small copies wait behind a checkpoint's bulk device-to-host
copy on a side stream: the question behind OverlappedSaver's paced host copies.

    python3 bench/gpu/copy_queue.py [--gib 8] [--piece-mib 64] [--in-flight 2]

A side stream copies --gib GiB from the GPU into page-locked host memory, either queued all at
once or paced (--in-flight pieces of --piece-mib queued at a time by a background thread, as
the saver does); meanwhile the default stream runs a small kernel and waits for it, reads a
scalar back (a loss's .item()) and copies a small batch in from pageable memory, each timed,
every 5 ms; a probe slower than 5 ms is listed with when it began after the bulk copy's start. Without the bulk copy (the
baseline, same run) they take tens of microseconds. Prints one JSON line per mode.
"""

import argparse
import json
import statistics
import threading
import time

import torch


def probe(stop: threading.Event, out: dict) -> None:
    x = torch.ones(1, device="cuda")
    batch = torch.randint(0, 50000, (8, 1025))
    reads, ins, kernels, slow = [], [], [], []
    while not stop.is_set():
        t0 = time.perf_counter()
        y = x * 2
        torch.cuda.current_stream().synchronize()
        t1 = time.perf_counter()
        y.sum().item()
        t2 = time.perf_counter()
        batch.to("cuda", non_blocking=True)
        torch.cuda.current_stream().synchronize()
        t3 = time.perf_counter()
        kernels.append(t1 - t0)
        reads.append(t2 - t1)
        ins.append(t3 - t2)
        if t3 - t0 > 0.005:  # when, from the bulk copy's start, a slow probe began, and its parts
            slow.append([round((t0 - out["bulk_t0"]) * 1e3, 1) if "bulk_t0" in out else None,
                         round((t1 - t0) * 1e3, 2), round((t2 - t1) * 1e3, 2), round((t3 - t2) * 1e3, 2)])
        time.sleep(0.005)
    out["read_ms"], out["in_ms"], out["kernel_ms"], out["slow"] = reads, ins, kernels, slow


def summary(xs):
    xs = sorted(v * 1e3 for v in xs)
    return {"n": len(xs), "median": statistics.median(xs), "max": xs[-1]} if xs else None


def run(mode: str, src, host, piece: int, in_flight: int) -> dict:
    side = torch.cuda.Stream()
    torch.cuda.synchronize()
    stop, out = threading.Event(), {}
    t = threading.Thread(target=probe, args=(stop, out))
    t.start()
    time.sleep(0.05)
    t0 = time.perf_counter()
    out["bulk_t0"] = t0
    n = src.numel()
    if mode == "all-at-once":
        with torch.cuda.stream(side):
            for at in range(0, n, piece):
                host[at : at + piece].copy_(src[at : at + piece], non_blocking=True)
        side.synchronize()
    elif mode == "paced":
        queued = []
        with torch.cuda.stream(side):
            for at in range(0, n, piece):
                if len(queued) >= in_flight:
                    queued.pop(0).synchronize()
                host[at : at + piece].copy_(src[at : at + piece], non_blocking=True)
                ev = torch.cuda.Event()
                ev.record(side)
                queued.append(ev)
        side.synchronize()
    else:
        time.sleep(0.5)
    took = time.perf_counter() - t0
    stop.set()
    t.join()
    return {"mode": mode, "bulk_s": took, "gb_per_s": (n / took / 1e9) if mode != "none" else None,
            "kernel_sync_ms": summary(out["kernel_ms"]), "scalar_read_ms": summary(out["read_ms"]),
            "small_copy_in_ms": summary(out["in_ms"]),
            "slow_probes_ms_from_bulk_start_kernel_read_in": out["slow"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=8)
    ap.add_argument("--piece-mib", type=int, default=64)
    ap.add_argument("--in-flight", type=int, default=2)
    a = ap.parse_args()
    n = int(a.gib * (1 << 30))
    src = torch.empty(n, dtype=torch.uint8, device="cuda")
    host = torch.empty(n, dtype=torch.uint8).pin_memory()
    info = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "gib": a.gib, "piece_mib": a.piece_mib, "in_flight": a.in_flight}
    print(json.dumps(info), flush=True)
    for mode in ("none", "all-at-once", "paced", "none", "all-at-once", "paced"):
        print(json.dumps(run(mode, src, host, a.piece_mib << 20, a.in_flight)), flush=True)


if __name__ == "__main__":
    main()
