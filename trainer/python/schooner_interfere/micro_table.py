"""Tables of the interference microbenchmarks' output (gpu/interference/micro/micro.cu prints
one JSON object a line): each benchmark's rate alone, the L2 footprint sweep, and for every
pair the slowdown of each side back to back on one stream and colocated on two.

  python3 -m schooner_interfere.micro_table micro.jsonl > micro.md
"""

from __future__ import annotations

import argparse
import json
import sys


def load(lines) -> dict:
    out = {"device": None, "alone": [], "sweep": [], "pairs": {}}
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except ValueError as e:
            raise SystemExit(f"line {n}: not JSON: {e}") from None
        mode = rec.get("mode")
        if "device" in rec:
            out["device"] = rec
        elif mode == "alone":
            out["alone"].append(rec)
        elif mode == "l2-sweep":
            out["sweep"].append(rec)
        elif mode in ("back-to-back", "colocated"):
            out["pairs"][(mode, rec["a"], rec["b"])] = rec
        else:
            raise SystemExit(f"line {n}: unknown record {line[:80]}")
    if out["device"] is None:
        raise SystemExit("no device line: is this micro's output?")
    return out


def render(d: dict) -> str:
    dev = d["device"]
    w = [f"{dev['device']} (cc {dev['cc']}, {dev['sms']} SMs, L2 {dev['l2_bytes'] / 2**20:.0f} MiB), "
         f"{dev['blocks_per_sm']} blocks of {dev['threads']} threads per SM per kernel, "
         f"median of {dev['repeats']} runs of {dev['ms']:g} ms", ""]
    w += ["| benchmark | alone | unit | launch ms |", "|---|---:|---|---:|"]
    for r in d["alone"]:
        w.append(f"| {r['bench']} | {r['rate']:.4g} | {r['unit']} | {r['ms_per_launch']:.3g} |")
    if d["sweep"]:
        w += ["", "L2 footprint sweep (read rate against bytes read):", "",
              "| footprint MiB | GB/s |", "|---:|---:|"]
        w += [f"| {r['footprint_mib']} | {r['rate']:.4g} |" for r in d["sweep"]]
    names = [r["bench"] for r in d["alone"]]
    for mode in ("colocated", "back-to-back"):
        if not any(k[0] == mode for k in d["pairs"]):
            continue
        w += ["", f"Slowdown {mode} (row's slowdown beside the column; 1.00 = as fast as alone):", "",
              "| | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
        for a in names:
            cells = []
            for b in names:
                r = d["pairs"].get((mode, a, b))
                if r is not None:
                    cells.append(f"{r['slowdown_a']:.2f}")
                elif (r := d["pairs"].get((mode, b, a))) is not None:
                    cells.append(f"{r['slowdown_b']:.2f}")
                else:
                    cells.append("–")
            w.append(f"| {a} | " + " | ".join(cells) + " |")
    return "\n".join(w) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m schooner_interfere.micro_table", description=__doc__.split("\n\n")[0])
    p.add_argument("jsonl", help="micro's output")
    a = p.parse_args(argv)
    with open(a.jsonl) as f:
        sys.stdout.write(render(load(f)))


if __name__ == "__main__":
    main()
