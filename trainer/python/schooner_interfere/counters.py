"""Nsight Compute counters of one workload: what each workload asks of the GPU's units, beside
the study's timings. `ncu` profiles a child process that runs the workload's units (child.py
`units`): a few warm-up units, then `count` units inside the NVTX range MEASURED, the only
kernels profiled. The answer is each metric averaged over those kernels, weighted by their
durations, so a workload reads as the GPU spent its time on it.

`ncu` is often unusable: not installed, or refused the performance counters (ERR_NVGPUCTRPERM
where profiling is restricted to administrators, or a virtual machine that hides them). Then
the study records the reason instead of counters; nothing else of the study depends on them.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess

# The range around the profiled units (child.py pushes it).
MEASURED = "schooner-measured"

# What decides a kernel's bound (kernel_profiles): the SMs' throughput and DRAM's, each against
# its peak. Not the memory system's as a whole: a large GEMM keeps L2 and shared memory busy (95%
# on an H100, as busy as its SMs at 94%) while reading DRAM at 27%; what a co-runner contends
# for is DRAM.
SM_THROUGHPUT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
DRAM_THROUGHPUT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"

# Metrics of ncu's "speed of light" and occupancy sections, named the same from Volta to
# Hopper: SM and memory throughput against their peaks, DRAM throughput, L1 and L2 hit rates,
# achieved occupancy, and each kernel's duration (the weight).
METRICS = {
    SM_THROUGHPUT: "sm_throughput_pct",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory_throughput_pct",
    DRAM_THROUGHPUT: "dram_throughput_pct",
    "l1tex__t_sector_hit_rate.pct": "l1_hit_rate_pct",
    "lts__t_sector_hit_rate.pct": "l2_hit_rate_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
}
DURATION = "gpu__time_duration.sum"
# Each kernel's dynamic shared memory: part of the launch shape the colocation shim keys
# kernels by (kernel_profiles).
SMEM = "launch__shared_mem_per_block_dynamic"


class Unavailable(Exception):
    """ncu cannot give counters here; the message says why."""


def command(ncu: str, child: list[str]) -> list[str]:
    """The ncu command line around a child's command line."""
    # Mangled kernel names: what the driver's cuFuncGetName gives the colocation shim.
    return [ncu, "--csv", "--page", "raw", "--print-units", "base", "--print-kernel-base", "mangled", "--nvtx",
            "--nvtx-include", MEASURED + "/", "--metrics", ",".join([*METRICS, DURATION, SMEM]),
            "--target-processes", "all", *child]


def collect(child: list[str], env: dict | None = None, cwd: str | None = None, timeout: float = 600,
            ncu: str | None = None) -> dict:
    """Runs child under ncu and returns {"kernels", "duration_ms", "metrics", "tool"}; raises
    Unavailable with ncu's own words when it cannot."""
    ncu = _find(ncu)
    res = parse(run(child, env, cwd, timeout, ncu))
    res["tool"] = _version(ncu)
    return res


def _find(ncu: str | None) -> str:
    ncu = ncu or os.environ.get("SCHOONER_NCU") or shutil.which("ncu")
    if not ncu:
        raise Unavailable("ncu (Nsight Compute) is not installed on this machine")
    return ncu


def run(child: list[str], env: dict | None = None, cwd: str | None = None, timeout: float = 600,
        ncu: str | None = None) -> str:
    """Runs child under ncu and returns ncu's output (its CSV); raises Unavailable with ncu's
    own words when it cannot."""
    ncu = _find(ncu)
    try:
        out = subprocess.run(command(ncu, child), capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Unavailable(f"ncu did not finish in {timeout:.0f} s") from None
    except OSError as e:
        raise Unavailable(f"running ncu: {e}") from None
    refusal = _refusal(out.stdout + "\n" + out.stderr)
    if refusal:
        raise Unavailable(refusal)
    if out.returncode != 0:
        raise Unavailable(f"ncu exited with {out.returncode}: {_last_line(out.stderr or out.stdout)}")
    return out.stdout


def _refusal(text: str) -> str:
    for line in text.splitlines():
        if "ERR_NVGPUCTRPERM" in line:
            return ("the GPU's performance counters are restricted (ERR_NVGPUCTRPERM): profiling needs "
                    "administrator rights or the driver's NVreg_RestrictProfilingToAdminUsers=0")
        if "==ERROR==" in line:
            return "ncu: " + line.split("==ERROR==", 1)[1].strip()
    return ""


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else "no output"


def _version(ncu: str) -> str:
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "ncu"
    lines = [ln for ln in out.stdout.splitlines() if ln.strip()]
    return "ncu " + lines[-1].strip() if lines else "ncu"


def _number(s: str) -> float | None:
    s = s.strip().replace(",", "")  # ncu groups digits by the locale
    if s in ("", "n/a", "N/A"):
        return None
    try:
        return float(s)
    except ValueError:
        return None


def _kernel_rows(text: str) -> tuple[dict, list]:
    """ncu's raw CSV page (a header row, a units row, one row per profiled kernel; lines before
    the header are the application's and ncu's own): the column index by name and each
    profiled kernel as (duration ns, row)."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        raise Unavailable("ncu profiled no kernel in the measured range (no CSV in its output)")
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, body = rows[0], [r for r in rows[1:] if len(r) == len(rows[0])]
    col = {name: i for i, name in enumerate(header)}
    if DURATION not in col:
        raise Unavailable(f"ncu's CSV has no {DURATION} column")
    kernels = []
    for r in body:
        if r[col["ID"]].strip() == "":
            continue  # the units row
        d = _number(r[col[DURATION]])
        if d is not None and d > 0:
            kernels.append((d, r))
    if not kernels:
        raise Unavailable("ncu profiled no kernel in the measured range")
    return col, kernels


def parse(text: str) -> dict:
    """ncu's raw CSV page as duration-weighted means per metric over the profiled kernels."""
    col, kernels = _kernel_rows(text)
    total = sum(d for d, _ in kernels)
    metrics = {}
    for name, key in METRICS.items():
        if name not in col:
            continue
        vals = [(d, _number(r[col[name]])) for d, r in kernels]
        vals = [(d, v) for d, v in vals if v is not None]
        weight = sum(d for d, _ in vals)
        if weight > 0:
            metrics[key] = round(sum(d * v for d, v in vals) / weight, 2)
    return {"kernels": len(kernels), "duration_ms": round(total / 1e6, 4), "metrics": metrics}


# The longest kernel name the colocation shim keeps (its profile entries hold 159 bytes and a
# longer name in its file would not load).
SHIM_NAME_MAX = 159


def _dims(s: str) -> tuple[int, int, int] | None:
    """ncu's "(x, y, z)" launch dimensions."""
    parts = [p.strip() for p in s.strip().strip("()").split(",")]
    if len(parts) != 3:
        return None
    try:
        return int(parts[0]), int(parts[1]), int(parts[2])
    except ValueError:
        return None


def kernel_profiles(text: str) -> list[dict]:
    """Each kernel shape of ncu's raw CSV (name, grid, block, dynamic shared memory) with its
    fastest profiled time and its bound: compute when the SMs' throughput (share of their peak)
    is at least DRAM's, memory otherwise, over the duration-weighted rows of that shape. This is
    what the colocation shim cannot learn by itself: a kernel's name only hints at its bound
    (decode's skinny GEMMs are named like any GEMM and are memory-bound)."""
    col, kernels = _kernel_rows(text)
    for need in ("Kernel Name", "Grid Size", "Block Size"):
        if need not in col:
            raise Unavailable(f"ncu's CSV has no {need!r} column")
    shapes: dict[tuple, dict] = {}
    for d, r in kernels:
        grid, block = _dims(r[col["Grid Size"]]), _dims(r[col["Block Size"]])
        if grid is None or block is None:
            continue
        smem = int(_number(r[col[SMEM]]) or 0) if SMEM in col else 0
        name = r[col["Kernel Name"]].strip().encode()[:SHIM_NAME_MAX].decode(errors="ignore")
        sm = _number(r[col[SM_THROUGHPUT]]) if SM_THROUGHPUT in col else None
        dram = _number(r[col[DRAM_THROUGHPUT]]) if DRAM_THROUGHPUT in col else None
        if sm is None or dram is None:
            continue
        k = shapes.setdefault((name, grid, block, smem), {"name": name, "grid": grid, "block": block, "smem": smem,
                                                          "fastest_ns": d, "sm": 0.0, "dram": 0.0, "weight": 0.0})
        k["fastest_ns"] = min(k["fastest_ns"], d)
        k["sm"] += d * sm
        k["dram"] += d * dram
        k["weight"] += d
    out = []
    for k in shapes.values():
        bound = "compute" if k["sm"] >= k["dram"] else "memory"
        out.append({"name": k["name"], "grid": k["grid"], "block": k["block"], "smem": k["smem"],
                    "fastest_ns": int(k["fastest_ns"]), "bound": bound,
                    METRICS[SM_THROUGHPUT]: round(k["sm"] / k["weight"], 2),
                    METRICS[DRAM_THROUGHPUT]: round(k["dram"] / k["weight"], 2)})
    out.sort(key=lambda k: (k["name"], k["grid"], k["block"], k["smem"]))
    return out


def shim_profiles(kernels: list[dict]) -> str:
    """Kernel profiles in the colocation shim's file format (gpu/colocate/shim/profile.c: name,
    grid, block, dynamic shared memory, fastest ns, SMs, bound; tab-separated). SMs are left 0:
    the shim works them out from the occupancy API at the first launch."""
    lines = ["# schooner colocation kernel profiles from Nsight Compute: name, grid, block, shared memory, fastest ns, SMs, bound"]
    for k in kernels:
        g, b = k["grid"], k["block"]
        lines.append(f"{k['name']}\t{g[0]},{g[1]},{g[2]}\t{b[0]},{b[1]},{b[2]}\t{k['smem']}\t{k['fastest_ns']}\t0\t{k['bound']}")
    return "\n".join(lines) + "\n"
