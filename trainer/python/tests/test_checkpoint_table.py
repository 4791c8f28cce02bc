"""bench/gpu/checkpoint_table.py: the checkpoint-overhead table from the trainer's measure lines,
with the restore column saying whether each final checkpoint read back bit for bit."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def record(method, times, **extra):
    return {"name": "gpt-1.3b", "params": 1_420_000_000, "gpu": "NVIDIA H100 80GB HBM3", "torch": "2.11.0",
            "checkpoint": method, "checkpoint_state": "full", "checkpoint_every": 0 if method == "none" else 50,
            "iter_seconds_all": times, **extra}


def run_table(runs, disk=None):
    """The script on runs written as run.sh writes them (checkpoint.jsonl, and disk.txt with
    dd's line when given), in a folder of their own."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "checkpoint.jsonl")
        with open(path, "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in runs))
        if disk is not None:
            with open(os.path.join(d, "disk.txt"), "w") as f:
                f.write(disk + "\n")
        return subprocess.run([sys.executable, os.path.join(REPO, "bench", "gpu", "checkpoint_table.py"), path],
                              capture_output=True, text=True, timeout=60)


def rows_of(out):
    return {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| ") and "---" not in line}


class CheckpointTableTest(unittest.TestCase):
    def table(self, runs):
        p = run_table(runs)
        self.assertEqual(p.returncode, 0, p.stderr)
        return rows_of(p.stdout)

    def test_slowdowns_stalls_and_the_restore_column(self):
        rows = self.table([
            record("none", [0.4, 0.4, 0.4, 0.4]),
            record("agent", [0.4, 0.4, 0.404, 12.0], checkpoint_stalls=[0.05, 0.02, 0.03, 12.0],
                   checkpoint_bytes=17_000_000_000, restore_verified=True, restore_s=48.6),
            record("torch.save", [0.4, 28.0, 0.4, 29.0], checkpoint_stalls=[27.0, 29.0], restore_verified=False,
                   restore_s=20.0, restore_differences=["state.model.w: values differ"]),
            record("async_save", [0.4, 0.4, 0.8, 0.8], checkpoint_stalls=[14.0, 30.0]),
        ])
        self.assertIn("| 0.4013 | +0.3% |", rows["agent"])  # without the last save, which waits for the commit
        self.assertIn("0.050 / 0.025 / 12.000 s", rows["agent"])
        self.assertTrue(rows["agent"].rstrip().endswith("| bit for bit (48.6 s) |"), rows["agent"])
        self.assertIn("**DIFFERS**: state.model.w: values differ", rows["torch.save"])
        self.assertTrue(rows["async_save"].rstrip().endswith("| - |"), rows["async_save"])  # not checked
        self.assertTrue(rows["none"].rstrip().endswith("| - |"), rows["none"])

    def test_the_final_save_gives_a_persistence_rate_against_the_raw_disk(self):
        p = run_table([record("none", [0.4, 0.4]),
                       record("agent", [0.4, 11.0], checkpoint_stalls=[0.03, 11.2], checkpoint_bytes=17_000_000_000),
                       record("torch.save", [0.4, 24.0], checkpoint_stalls=[22.7, 24.0])],
                      disk="4294967296 bytes (4.3 GB, 4.0 GiB) copied, 2.05724 s, 2.1 GB/s")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("raw disk (dd, direct I/O): 2.09 GB/s", p.stdout)
        rows = rows_of(p.stdout)
        self.assertIn("| ≥ 1.52 GB/s (73% of raw) |", rows["agent"])
        self.assertIn("| ≥ 0.71 GB/s (34% of raw) |", rows["torch.save"], "every method's bytes are the state's")
        self.assertIn("| - | - |", rows["none"])

    def test_a_file_without_a_run_without_checkpoints_is_refused(self):
        p = run_table([record("agent", [0.4, 0.4])])
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("no run without checkpoints", p.stderr)


if __name__ == "__main__":
    unittest.main()
