"""Prints the checkpoint-overhead table from the JSON lines the reference trainer appends
(bench/gpu/run.sh checkpoint): per run the mean iteration time over the measured iterations,
the slowdown against the run without checkpoints, and the stall per checkpoint (the time the
training loop was held by each save)."""

import json
import statistics
import sys


def main(path: str) -> None:
    runs = [json.loads(line) for line in open(path) if line.strip()]
    base = next((r for r in runs if r["checkpoint"] == "none"), None)
    if base is None:
        sys.exit("no run without checkpoints in " + path)
    mean = lambda r: statistics.mean(r["iter_seconds_all"])
    b = mean(base)
    size = base["params"] * 4 / 1e9
    print(f"model: {base['name']}, {base['params'] / 1e9:.2f} B parameters, checkpoint {size:.1f} GB (fp32 weights), "
          f"{base['gpu']}, torch {base['torch']}")
    print()
    print("| checkpointing | every | iterations measured | mean s/iter | slowdown | checkpoints | stall per checkpoint (median) |")
    print("|---|---|---|---|---|---|---|")
    for r in runs:
        stalls = r.get("checkpoint_stalls") or []
        stall = f"{statistics.median(stalls):.3f} s" if stalls else "-"
        every = r["checkpoint_every"] or "-"
        print(f"| {r['checkpoint']} | {every} | {len(r['iter_seconds_all'])} | {mean(r):.4f} | "
              f"{(mean(r) / b - 1) * 100:+.1f}% | {len(stalls)} | {stall} |")


if __name__ == "__main__":
    main(sys.argv[1])
