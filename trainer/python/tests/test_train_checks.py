"""The reference trainer's checks on CPU (gloo), as CI runs them: every parallel layout computes
what one process computes, and a run stopped at a checkpoint resumes bit for bit through a real
checkpoint agent (saving beside the next iteration, and blocking), in one process and with every
rank of a DP=2 x PP=2 layout saving or restoring its stage's shard (bench/gpu/parallel_check.sh, bench/gpu/restore_check.sh)."""
import os
import subprocess
import sys
import tempfile
import unittest

try:
    import torch
except ImportError:
    torch = None

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def schooner_binary():
    path = os.environ.get("SCHOONER_BIN") or os.path.join(REPO, "bin", "schooner")
    return path if os.access(path, os.X_OK) else None


def run_check(script, env_extra):
    with tempfile.TemporaryDirectory() as out:
        # The scripts run python3: make it this interpreter (the one with torch).
        bindir = os.path.join(out, "bin")
        os.mkdir(bindir)
        os.symlink(sys.executable, os.path.join(bindir, "python3"))
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), **env_extra)
        p = subprocess.run(["bash", os.path.join(REPO, "bench", "gpu", script), os.path.join(out, "results")], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=600)
        last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
        return last, p.stdout + p.stderr


@unittest.skipIf(torch is None, "PyTorch is not installed")
class TrainerChecks(unittest.TestCase):
    def test_every_layout_computes_what_one_process_computes(self):
        last, out = run_check("parallel_check.sh", {})
        self.assertEqual(last, "RESULT: all layouts agree", out)

    def test_a_stopped_run_resumes_bit_for_bit(self):
        binary = schooner_binary()
        if binary is None:
            self.skipTest("no schooner binary for the checkpoint agent: set SCHOONER_BIN or go build -o bin/schooner ./cmd/schooner")
        # Each way the trainer saves through the agent: beside the next iteration, and blocking.
        for layout, mode in (("1 1 1", "overlap"), ("2 2 1", "overlap"), ("1 1 1", "blocking")):
            with self.subTest(layout=layout, mode=mode):
                last, out = run_check("restore_check.sh", {"SCHOONER_BIN": binary, "LAYOUT": layout, "CKPT_MODE": mode})
                self.assertTrue(last.startswith("RESULT: resumed exactly (max relative difference 0.00e+00"), out)


if __name__ == "__main__":
    unittest.main()
