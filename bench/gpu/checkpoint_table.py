"""Prints the checkpoint-overhead table from the JSON lines the reference trainer appends
(bench/gpu/run.sh checkpoint): per run the mean iteration time over the measured iterations,
the slowdown against the run without checkpoints, the same without the last iteration (whose
save waits for the agent's commit, a cost paid once per run), the stall per checkpoint (the
time the training loop was held by each save), the rate at which the final checkpoint was
made durable against the disk's raw speed (dd's line in disk.txt beside the file, when run.sh
wrote one), and whether the final checkpoint, read back through the method that wrote it,
equals the trainer's state bit for bit (--verify-restore)."""

import json
import os
import re
import statistics
import sys


def main(path: str) -> None:
    runs = [json.loads(line) for line in open(path) if line.strip()]
    base = next((r for r in runs if r["checkpoint"] == "none"), None)
    if base is None:
        sys.exit("no run without checkpoints in " + path)
    mean = lambda r: statistics.mean(r["iter_seconds_all"])
    but_last = lambda r: statistics.mean(r["iter_seconds_all"][:-1])
    b, bl = mean(base), but_last(base)
    size = base["params"] * 4 / 1e9
    sized = next((r["checkpoint_bytes"] for r in runs if r.get("checkpoint_bytes")), 0)
    what = f"{sized / 1e9:.1f} GB per checkpoint ({base.get('checkpoint_state', 'model')} state)" if sized else f"{size:.1f} GB of fp32 weights"
    disk = raw_disk_rate(os.path.join(os.path.dirname(os.path.abspath(path)), "disk.txt"))
    print(f"model: {base['name']}, {base['params'] / 1e9:.2f} B parameters, {what}, {base['gpu']}, torch {base['torch']}")
    if disk:
        print(f"raw disk (dd, direct I/O): {disk:.2f} GB/s")
    print()
    print("| checkpointing | state | every | iterations measured | mean s/iter | slowdown | without the last | slowdown | checkpoints | stall first / steady median / last | back-pressure | GB/s to the agent | persisted, final save | restore |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        stalls = r.get("checkpoint_stalls") or []
        if stalls:
            steady = stalls[1:-1]
            mid = f"{statistics.median(steady):.3f}" if steady else "–"
            stall = f"{stalls[0]:.3f} / {mid} / {stalls[-1]:.3f} s"
        else:
            stall = "-"
        back = r.get("checkpoint_backpressure")
        back = f"{sum(back):.2f} s" if back else "-"
        handed = r.get("checkpoint_handed_s")
        rate = "-"
        if handed and r.get("checkpoint_bytes"):
            rate = f"{r['checkpoint_bytes'] / statistics.median(handed) / 1e9:.1f}"
        every = r["checkpoint_every"] or "-"
        restore = restore_cell(r)
        persisted = persisted_cell(sized, stalls, disk)
        print(f"| {r['checkpoint']} | {r.get('checkpoint_state', '-')} | {every} | {len(r['iter_seconds_all'])} | {mean(r):.4f} | "
              f"{(mean(r) / b - 1) * 100:+.1f}% | {but_last(r):.4f} | {(but_last(r) / bl - 1) * 100:+.1f}% | {len(stalls)} | {stall} | {back} | {rate} | {persisted} | {restore} |")


def raw_disk_rate(path: str) -> float:
    """The disk's sequential write speed in GB/s from dd's summary line ("N bytes (...) copied,
    S s, ..."), or 0 when there is none."""
    try:
        text = open(path).read()
    except OSError:
        return 0.0
    m = re.search(r"(\d+) bytes .*copied, ([0-9.]+) s", text)
    return int(m.group(1)) / float(m.group(2)) / 1e9 if m and float(m.group(2)) > 0 else 0.0


def persisted_cell(size: int, stalls, disk: float) -> str:
    """A checkpoint's bytes over the final save's stall, which for every method lasts until the
    last checkpoint is durable: a lower bound of the rate the method persists at (the wait may
    also cover an earlier checkpoint still being written, and the copy out of the GPU)."""
    if not size or not stalls or stalls[-1] <= 0:
        return "-"
    rate = size / stalls[-1] / 1e9
    return f"≥ {rate:.2f} GB/s" + (f" ({rate / disk * 100:.0f}% of raw)" if disk else "")


def restore_cell(r) -> str:
    """What the bit-for-bit check of the run's final checkpoint said: not run (no checkpoint, or
    a run without --verify-restore), equal (with its time), or the first difference."""
    if "restore_verified" not in r:
        return "-"
    if r["restore_verified"]:
        return f"bit for bit ({r.get('restore_s', 0):.1f} s)"
    first = (r.get("restore_differences") or ["?"])[0]
    return f"**DIFFERS**: {first}"


if __name__ == "__main__":
    main(sys.argv[1])
