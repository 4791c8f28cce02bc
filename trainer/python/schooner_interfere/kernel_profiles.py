"""Seeds the colocation runtime's kernel profiles from Nsight Compute: runs one workload's units
under ncu (as the study's counters do) and writes each kernel shape's fastest time and bound
(compute or memory, from the SMs' and the memory system's throughput) in the shim's file format.
A profile file the runtime loads (`schooner colocate run --profiles DIR`: DIR/hp.tsv and
DIR/be.tsv) tells it from the first launch which kernels complement each other; without one it
guesses from kernel names.

  python3 -m schooner_interfere.kernel_profiles --workload decode-chain --out DIR/hp.tsv
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import child, counters



def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m schooner_interfere.kernel_profiles", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", required=True, help="a study workload (decode-chain, gemm, train-step, ...)")
    p.add_argument("--scale", default="h200", help="the workload's scale, as the runtime's program runs it")
    p.add_argument("--device", default="cuda")
    p.add_argument("--units", type=int, default=3, help="units profiled (after the warm-up)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--out", required=True, help="the profile file to write (the shim's TSV)")
    p.add_argument("--timeout", type=float, default=300, help="seconds ncu may take")
    a = p.parse_args(argv)
    cmd = child.command("units", a.workload, a.scale, 0, a.device, "--count", str(a.units), "--warmup", str(a.warmup))
    try:
        kernels = counters.kernel_profiles(counters.run(cmd, env=child.environment(), cwd=child.ROOT, timeout=a.timeout))
    except counters.Unavailable as e:
        print(f"kernel profiles of {a.workload}: {e}", file=sys.stderr)
        return 1
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        f.write(counters.shim_profiles(kernels))
    os.replace(tmp, a.out)
    bounds = [k["bound"] for k in kernels]
    print(json.dumps({"workload": a.workload, "shapes": len(kernels), "compute": bounds.count("compute"),
                      "memory": bounds.count("memory"), "out": a.out}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
