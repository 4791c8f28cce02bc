"""The trainer's iteration profiler (SCHOONER_PROFILE_STEPS) and its loss read-back."""

import os
import subprocess
import sys
import tempfile
import unittest

from schooner_train import iteration_profile

try:
    import torch
except ImportError:
    torch = None

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class StepsTest(unittest.TestCase):
    def test_steps_come_from_the_environment_and_bad_ones_are_refused(self):
        old = os.environ.get("SCHOONER_PROFILE_STEPS")
        self.addCleanup(lambda: os.environ.__setitem__("SCHOONER_PROFILE_STEPS", old) if old is not None
                        else os.environ.pop("SCHOONER_PROFILE_STEPS", None))
        os.environ["SCHOONER_PROFILE_STEPS"] = "11, 12"
        self.assertEqual(iteration_profile.steps_from_env(), {11, 12})
        os.environ["SCHOONER_PROFILE_STEPS"] = ""
        self.assertEqual(iteration_profile.steps_from_env(), set())
        self.assertIsNone(iteration_profile.start(3, set()))
        os.environ["SCHOONER_PROFILE_STEPS"] = "eleven"
        with self.assertRaisesRegex(SystemExit, "whole steps"):
            iteration_profile.steps_from_env()


@unittest.skipIf(torch is None, "PyTorch is not installed")
class TrainerProfileTest(unittest.TestCase):
    def test_loss_sum_adds_the_microbatch_losses_in_order_as_floats(self):
        from schooner_train.pipeline import loss_sum

        parts = [torch.tensor(0.1, dtype=torch.float32), torch.tensor(0.2, dtype=torch.float32)]
        want = 0.0
        for p in parts:
            want += float(p)
        self.assertEqual(loss_sum(parts), want)
        self.assertEqual(loss_sum([]), 0.0)

    def test_a_profiled_iteration_prints_its_table_and_writes_its_trace(self):
        with tempfile.TemporaryDirectory() as out:
            env = dict(os.environ, SCHOONER_PROFILE_STEPS="2", SCHOONER_PROFILE_DIR=out, PYTHONPATH=HERE)
            p = subprocess.run([sys.executable, "-m", "schooner_train.train", "--name", "tiny", "--layers", "1",
                                "--hidden", "32", "--heads", "2", "--ffn", "64", "--vocab", "50", "--seq-len", "16",
                                "--iterations", "3"], env=env, capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            self.assertIn("== profile of the iteration ending at step 2", p.stderr)
            self.assertNotIn("ending at step 1:", p.stderr)
            self.assertEqual(os.listdir(out), ["step-2.json"])


if __name__ == "__main__":
    unittest.main()
