"""The interference executor: the node agent's Go runner (gpu/interference.ProcessExecutor)
drives it with one JSON request per line on standard input and reads one JSON answer per line
on standard output ({"ok": ...} or {"error": "..."}):

  {"op":"gpu"}                                            -> the GPU and its software
  {"op":"available","mechanism":{"kind":"mps","setting":50}} -> {"reason": ""} or why not
  {"op":"alone","workload":"gemm","request":{...}}        -> a dedicated run
  {"op":"shared","pair":{...},"mechanism":{...},"request":{...}} -> a run of the pair
  {"op":"counters","workload":"gemm"}                    -> its Nsight Compute counters, or why none

Mechanisms: dedicated-process (the latency-critical side alone in a child process, the
baseline of the MPS rows, which run it in one), sequential (one process, the two sides take
turns on the device: each unit runs to completion under a lock), streams and priority (two CUDA streams in this process, the
latency-critical one at the highest priority for `priority`), green-context-N (the best-effort
side's stream on a green context of N SMs, torch 2.11), time-slicing (the best-effort side in
a child process, no MPS), mps-N (both sides in child processes under an MPS daemon of this
run's own, the best-effort side at N% active threads; the daemon is always shut down), mig
(never: schooner does not change the MIG setting). On a CPU (tests, --allow-cpu) only
sequential and time-slicing run, and the GPU is reported as a CPU test run.

  python3 -m schooner_interfere.executor [--scale h200|tiny] [--allow-cpu]
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time

import torch

from . import child, counters, measure, workloads
from . import mps

HERE = child.ROOT


class Executor:
    def __init__(self, scale: str, device: torch.device, seed: int = 0):
        self.scale, self.device, self.seed = scale, device, seed
        self.cuda = device.type == "cuda"
        self._built: dict[str, workloads.Workload] = {}

    def workload(self, name: str) -> workloads.Workload:
        if name not in self._built:
            self._built[name] = workloads.build(name, self.device, self.scale, self.seed)
        return self._built[name]

    # --- answers --------------------------------------------------------------------------

    def gpu(self) -> dict:
        if not self.cuda:
            return {"model": "CPU (a test run, not a GPU)", "driver": "none", "runtime": f"torch {torch.__version__}",
                    "scale": self.scale}
        p = torch.cuda.get_device_properties(self.device)
        info = {"model": p.name, "driver": _smi("driver_version") or "unknown", "cuda": torch.version.cuda or "",
                "sms": p.multi_processor_count, "memory_mib": p.total_memory >> 20, "runtime": f"torch {torch.__version__}",
                "scale": self.scale}
        # The card, in nvidia-smi's GPU-… form (torch prints the bare 8-4-4-4-12 hex): a study
        # continues only on the card it began on.
        card = str(getattr(p, "uuid", "") or "")
        if card:
            info["uuid"] = card if card.startswith("GPU-") else "GPU-" + card
        return info

    def available(self, m: dict) -> str:
        kind = m.get("kind")
        if kind == "mig":
            return "MIG studies are not run: schooner never changes a GPU's MIG setting"
        if kind in ("sequential", "time-slicing", "dedicated", "dedicated-process"):
            return ""
        if not self.cuda:
            return f"{kind} needs a CUDA GPU"
        if kind in ("streams", "priority"):
            return ""
        if kind == "green-context":
            gc = getattr(getattr(torch.cuda, "green_contexts", None), "GreenContext", None)
            if gc is None:
                return f"this torch ({torch.__version__}) has no green contexts (torch 2.11 has)"
            sms = torch.cuda.get_device_properties(self.device).multi_processor_count
            if int(m.get("setting", 0)) >= sms:
                return f"{m.get('setting')} SMs is not fewer than the GPU's {sms}"
            return ""
        if kind == "mps":
            return mps.unavailable()
        return f"unknown mechanism {kind!r}"

    def alone(self, name: str, req: dict) -> dict:
        w = self.workload(name)
        side = workloads.SIDES[name][0]
        run = {"mechanism": {"kind": "dedicated"}, "repeats": 1}
        if side == "latency-critical":
            run["pair"] = {"latency_critical": name, "best_effort": ""}
            run["latency_critical"] = measure.latency_run(w, req, self.device)
        else:
            run["pair"] = {"latency_critical": "", "best_effort": name}
            loop = measure.ThroughputLoop(w, self.device)
            loop.start()
            loop.ready.wait()
            # as long as a latency-critical run of this request would take: its think times
            _sleep_like(req)
            run["best_effort"] = loop.stop()
        run["nvml"] = self.nvml()
        return run

    def shared(self, pair: dict, m: dict, req: dict) -> dict:
        why = self.available(m)
        if why:
            raise RuntimeError(f"{_name(m)} is unavailable: {why}")
        lc_name, be_name = pair["latency_critical"], pair["best_effort"]
        kind = m["kind"]
        if kind == "dedicated-process":
            # the latency-critical workload alone, in a child process as MPS runs it: the
            # baseline of the MPS rows (a launch-bound workload runs differently in a fresh
            # process than beside the executor's threads)
            return {"pair": pair, "mechanism": m, "latency_critical": self._lc_child(lc_name, {}, req),
                    "nvml": self.nvml(), "repeats": 1}
        if kind == "time-slicing":
            lc, be = self._with_child_be(be_name, {}, lambda: measure.latency_run(self.workload(lc_name), req, self.device))
        elif kind == "mps":
            lc, be = self._mps(lc_name, be_name, int(m["setting"]), req)
        else:
            lc_stream = be_stream = None
            lock = measure.FairLock() if kind == "sequential" else None
            if kind in ("streams", "priority"):
                _, hi = torch.cuda.Stream.priority_range() if hasattr(torch.cuda.Stream, "priority_range") else (0, -3)
                lc_stream = torch.cuda.Stream(self.device, priority=hi if kind == "priority" else 0)
                be_stream = torch.cuda.Stream(self.device, priority=0)
            elif kind == "green-context":
                ctx = torch.cuda.green_contexts.GreenContext.create(num_sms=int(m["setting"]))
                be_stream = ctx.Stream()
            loop = measure.ThroughputLoop(self.workload(be_name), self.device, be_stream, lock)
            loop.start()
            loop.ready.wait()
            lc = measure.latency_run(self.workload(lc_name), req, self.device, lc_stream, lock)
            be = loop.stop()
        return {"pair": pair, "mechanism": m, "latency_critical": lc, "best_effort": be, "nvml": self.nvml(), "repeats": 1}

    def counters(self, name: str, units: int = 2, warmup: int = 3) -> dict:
        """The workload's Nsight Compute counters over `units` units after `warmup` (counters.py),
        or {"unavailable": why} where ncu cannot give them."""
        self.workload(name)  # a bad name fails here, not inside ncu
        args = self._child_args("units", name, "--count", str(units), "--warmup", str(warmup))
        try:
            # Within the study activity's 2-minute heartbeat timeout: a profile that takes longer
            # is reported as such, not left to look like a stuck GPU.
            return {"workload": name, **counters.collect(args, env=child.environment({}), cwd=HERE, timeout=100)}
        except counters.Unavailable as e:
            return {"workload": name, "unavailable": str(e)}

    # --- two processes --------------------------------------------------------------------

    def _child_args(self, side: str, name: str, *extra: str) -> list[str]:
        return child.command(side, name, self.scale, self.seed, str(self.device), *extra)

    def _child(self, side: str, name: str, env_extra: dict, req: dict | None = None) -> subprocess.Popen:
        args = self._child_args(side, name, *(["--request", json.dumps(req)] if req is not None else []))
        return subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=child.environment(env_extra),
                                cwd=HERE)

    def _with_child_be(self, be_name: str, env: dict, run_lc):
        """Starts the best-effort side in a child, runs the latency-critical side (run_lc) once
        it counts, then stops the child and reads its throughput."""
        be = self._child("be", be_name, env)
        try:
            line = be.stdout.readline()
            if not line or not json.loads(line).get("ready"):
                raise RuntimeError(f"the best-effort child ({be_name}) did not start: exit {be.poll()}")
            lc = run_lc()
            be.stdin.close()
            out = be.stdout.readline()
            be.wait(timeout=60)
            if not out:
                raise RuntimeError(f"the best-effort child ({be_name}) ended without its throughput: exit {be.returncode}")
            return lc, json.loads(out)
        finally:
            if be.poll() is None:
                be.kill()
                be.wait()

    def _lc_child(self, lc_name: str, env: dict, req: dict) -> dict:
        """Runs the latency-critical side's requests in a child process of its own (with env
        added) and returns its latency figures; the child never outlives the call."""
        lc = self._child("lc", lc_name, env, req)
        try:
            out, _ = lc.communicate(timeout=3600)
        finally:
            if lc.poll() is None:  # stopped mid-run: no child outlives its step
                lc.kill()
                lc.wait()
        if lc.returncode != 0 or not out.strip():
            raise RuntimeError(f"the latency-critical child ({lc_name}) failed: exit {lc.returncode}")
        return json.loads(out.strip().splitlines()[-1])

    def _mps(self, lc_name: str, be_name: str, pct: int, req: dict):
        """Both sides as clients of an MPS daemon started for this run (mps.MpsServer: private
        pipe and log folders, shut down whatever happens), the best-effort side limited to
        pct% of the SMs' threads."""
        with mps.MpsServer() as server:
            env = server.env()
            return self._with_child_be(be_name, {**env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(pct)},
                                       lambda: self._lc_child(lc_name, env, req))

    def nvml(self) -> dict:
        if not self.cuda:
            return {}
        vals = _smi("clocks.sm,clocks.mem,power.draw,memory.used,temperature.gpu")
        try:
            sm, mem, power, used, temp = (v.strip() for v in vals.split(","))
            return {"sm_clock_mhz": int(float(sm)), "mem_clock_mhz": int(float(mem)), "power_w": float(power),
                    "memory_used_mib": int(float(used)), "temperature_c": int(float(temp))}
        except (ValueError, AttributeError):
            return {}


def _smi(fields: str) -> str:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _sleep_like(req: dict) -> None:
    """A dedicated best-effort run lasts about as long as the latency-critical side's run."""
    time.sleep(max(0.2, (int(req.get("warmup", 0)) + int(req["requests"])) * float(req.get("think_ms", 0)) / 1000))


def _name(m: dict) -> str:
    return m["kind"] + (f"-{m['setting']}" if m.get("setting") else "")


def serve(ex: Executor, inp, out) -> None:
    for line in inp:
        if not line.strip():
            continue
        try:
            q = json.loads(line)
            op = q.get("op")
            if op == "gpu":
                ans = ex.gpu()
            elif op == "available":
                ans = {"reason": ex.available(q["mechanism"])}
            elif op == "alone":
                ans = ex.alone(q["workload"], q["request"])
            elif op == "shared":
                ans = ex.shared(q["pair"], q["mechanism"], q["request"])
            elif op == "counters":
                ans = ex.counters(q["workload"])
            else:
                raise ValueError(f"unknown op {op!r}")
            out.write(json.dumps({"ok": ans}) + "\n")
        except Exception as e:  # noqa: BLE001 — every failure is an answer, the executor goes on
            out.write(json.dumps({"error": f"{type(e).__name__}: {e}"}) + "\n")
        out.flush()


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m schooner_interfere.executor", description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", default="h200", choices=sorted(workloads.SCALES))
    p.add_argument("--device", default="")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--allow-cpu", action="store_true", help="run on the CPU when there is no GPU (tests)")
    a = p.parse_args(argv)
    device = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type != "cuda" and not a.allow_cpu:
        raise SystemExit("no CUDA GPU here: an interference study needs one (--allow-cpu runs the CPU test mode)")
    # A study that is stopped (its caller's time is up, Ctrl-C) sends SIGTERM: end the run as
    # an exception, so that its cleanup runs (children killed, the MPS daemon shut down)
    # rather than leaving them to skew the next run on this GPU.
    signal.signal(signal.SIGTERM, _stopped)
    serve(Executor(a.scale, device, a.seed), sys.stdin, sys.stdout)


def _stopped(signum, _frame):
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    main()
