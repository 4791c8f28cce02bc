"""Nsight Compute counters of the interference study, on CPU: ncu's raw CSV parsed, and the
executor's counters answer through a fake ncu (a script that runs the profiled child, as ncu
does, and prints what ncu prints), including the ways ncu refuses."""
import io
import json
import os
import stat
import sys
import textwrap

import pytest

from schooner_interfere import counters
from schooner_interfere.child import command
from schooner_interfere.executor import Executor, serve

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# What ncu 2025 prints with --csv --page raw --print-units base: the application's and ncu's
# own lines first, then a header, a units row and one row per kernel (digits grouped).
CSV = textwrap.dedent('''\
    ==PROF== Connected to process 4242 (/usr/bin/python3.12)
    {"units": 2, "warmup": 3}
    ==PROF== Disconnected from process 4242
    "ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__throughput.avg.pct_of_peak_sustained_elapsed","gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed","gpu__time_duration.sum","l1tex__t_sector_hit_rate.pct","lts__t_sector_hit_rate.pct","sm__throughput.avg.pct_of_peak_sustained_elapsed","sm__warps_active.avg.pct_of_peak_sustained_active"
    "","","","","","","","","","","","%","%","nsecond","%","%","%","%"
    "0","4242","python3.12","h","gemm_kernel","1","7","(384, 1, 1)","(2, 66, 1)","0","9.0","20.00","30.00","3,000","n/a","50.00","90.00","10.00"
    "1","4242","python3.12","h","copy_kernel","1","7","(128, 1, 1)","(8192, 1, 1)","0","9.0","80.00","90.00","1,000","0.00","10.00","5.00","70.00"
    ''')


def test_parse_weights_each_metric_by_kernel_time():
    got = counters.parse(CSV)
    assert got["kernels"] == 2 and got["duration_ms"] == 0.004
    m = got["metrics"]
    assert m["dram_throughput_pct"] == 35.0  # (20·3000 + 80·1000) / 4000
    assert m["sm_throughput_pct"] == 68.75
    assert m["achieved_occupancy_pct"] == 25.0
    assert m["l1_hit_rate_pct"] == 0.0, "n/a rows leave the mean to the kernels that have it"
    assert m["l2_hit_rate_pct"] == 40.0


def test_parse_says_when_nothing_was_profiled():
    with pytest.raises(counters.Unavailable, match="no kernel"):
        counters.parse("==PROF== Disconnected from process 1\n")
    header_only = "\n".join(CSV.splitlines()[:5])
    with pytest.raises(counters.Unavailable, match="no kernel"):
        counters.parse(header_only)


def fake_ncu(tmp_path, body: str):
    """An executable standing in for ncu: --version answers; otherwise body runs with `child`
    the command line ncu would profile."""
    path = tmp_path / "ncu"
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent('''\
        import subprocess, sys
        args = sys.argv[1:]
        if args == ["--version"]:
            print("NVIDIA (R) Nsight Compute Command Line Profiler")
            print("Version 2025.3.0.0 (fake)")
            sys.exit(0)
        child = args[args.index("--target-processes") + 2:]
        assert "--nvtx-include" in args and "schooner-measured/" in args, args
        ''') + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_collect_runs_the_child_under_ncu(tmp_path):
    ncu = fake_ncu(tmp_path, f'''
        out = subprocess.run(child, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        print(out.stdout, end="")
        print({CSV.split(chr(10), 3)[3]!r})
        ''')
    child = command("units", "gemm", "tiny", 0, "cpu", "--count", "2", "--warmup", "1")
    env = dict(os.environ, PYTHONPATH=ROOT)
    got = counters.collect(child, env=env, cwd=ROOT, ncu=ncu)
    assert got["kernels"] == 2 and got["metrics"]["sm_throughput_pct"] == 68.75
    assert got["tool"] == "ncu Version 2025.3.0.0 (fake)"


@pytest.mark.parametrize("body,why", [
    ('print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU '
     'Performance Counters"); sys.exit(1)', "restricted"),
    ('print("==ERROR== Failed to find metric sm__throughput"); sys.exit(1)', "ncu: Failed to find metric"),
    ('sys.stderr.write("segfault\\n"); sys.exit(139)', "exited with 139: segfault"),
])
def test_collect_says_why_ncu_refused(tmp_path, body, why):
    ncu = fake_ncu(tmp_path, body)
    with pytest.raises(counters.Unavailable, match=why):
        counters.collect(["true"], ncu=ncu)


def test_collect_without_ncu(monkeypatch):
    monkeypatch.delenv("SCHOONER_NCU", raising=False)
    monkeypatch.setattr(counters.shutil, "which", lambda _: None)
    with pytest.raises(counters.Unavailable, match="not installed"):
        counters.collect(["true"])


def test_the_executor_answers_counters_or_why_not(tmp_path, monkeypatch):
    ncu = fake_ncu(tmp_path, f'''
        subprocess.run(child, check=True, capture_output=True)
        print({CSV.split(chr(10), 3)[3]!r})
        ''')
    ex = Executor("tiny", torch.device("cpu"))
    out = io.StringIO()
    monkeypatch.setenv("SCHOONER_NCU", ncu)
    serve(ex, io.StringIO(json.dumps({"op": "counters", "workload": "decode-chain"}) + "\n"), out)
    ans = json.loads(out.getvalue())["ok"]
    assert ans["workload"] == "decode-chain" and ans["kernels"] == 2 and "unavailable" not in ans
    monkeypatch.setenv("SCHOONER_NCU", str(tmp_path / "missing-ncu"))
    out = io.StringIO()
    serve(ex, io.StringIO(json.dumps({"op": "counters", "workload": "gemm"}) + "\n"), out)
    ans = json.loads(out.getvalue())["ok"]
    assert ans["workload"] == "gemm" and "running ncu" in ans["unavailable"]
    out = io.StringIO()
    serve(ex, io.StringIO(json.dumps({"op": "counters", "workload": "nope"}) + "\n"), out)
    assert "nope" in json.loads(out.getvalue())["error"]


def test_kernel_profiles_give_each_shape_its_bound_and_fastest_time():
    # A second run of the GEMM, faster, and a long name the shim would cut.
    long_name = "_Z" + "x" * 300
    extra = ('"2","4242","python3.12","h","gemm_kernel","1","7","(384, 1, 1)","(2, 66, 1)","0","9.0","20.00","30.00","2,500","n/a","50.00","90.00","10.00"\n'
             f'"3","4242","python3.12","h","{long_name}","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0","9.00","12.00","900","n/a","50.00","1.00","10.00"\n')
    got = counters.kernel_profiles(CSV + extra)
    by_name = {k["name"]: k for k in got}
    gemm, copy = by_name["gemm_kernel"], by_name["copy_kernel"]
    assert gemm["bound"] == "compute" and gemm["grid"] == (2, 66, 1) and gemm["block"] == (384, 1, 1)
    assert gemm["fastest_ns"] == 2500, "the fastest of the shape's rows"
    assert copy["bound"] == "memory" and copy["grid"] == (8192, 1, 1)
    # the bound weighs the SMs against DRAM, not the memory system as a whole: a GEMM's L2 and
    # shared-memory traffic (here 95%) is not what a co-runner contends for
    busy = ('"4","4242","python3.12","h","big_gemm","1","7","(384, 1, 1)","(2, 66, 1)","0","9.0","27.00","95.00","1,000","n/a","71.00","94.00","15.00"\n')
    assert {k["name"]: k["bound"] for k in counters.kernel_profiles(CSV + busy)}["big_gemm"] == "compute"
    cut = [k for k in got if k["name"].startswith("_Zx")][0]
    assert len(cut["name"]) == counters.SHIM_NAME_MAX and cut["bound"] == "memory"


def test_shim_profiles_are_lines_the_shim_reads():
    text = counters.shim_profiles(counters.kernel_profiles(CSV))
    lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
    # profile.c reads: name \t gx,gy,gz \t bx,by,bz \t smem \t ns \t sms \t bound
    assert lines == ["copy_kernel\t8192,1,1\t128,1,1\t0\t1000\t0\tmemory",
                     "gemm_kernel\t2,66,1\t384,1,1\t0\t3000\t0\tcompute"]


def test_the_kernel_profiles_command_writes_the_file(tmp_path, monkeypatch):
    ncu = fake_ncu(tmp_path, f'''
        out = subprocess.run(child, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert "--print-kernel-base" in args and "mangled" in args, args
        print({CSV.split(chr(10), 3)[3]!r})
        ''')
    monkeypatch.setenv("SCHOONER_NCU", ncu)
    from schooner_interfere import kernel_profiles
    out = tmp_path / "hp.tsv"
    assert kernel_profiles.main(["--workload", "gemm", "--scale", "tiny", "--device", "cpu", "--units", "1",
                                 "--warmup", "1", "--out", str(out)]) == 0
    assert "gemm_kernel\t2,66,1\t384,1,1\t0\t3000\t0\tcompute" in out.read_text()
    monkeypatch.setenv("SCHOONER_NCU", str(tmp_path / "missing"))
    assert kernel_profiles.main(["--workload", "gemm", "--scale", "tiny", "--device", "cpu", "--out",
                                 str(tmp_path / "x.tsv")]) == 1
    assert not (tmp_path / "x.tsv").exists(), "nothing written when ncu gave nothing"
