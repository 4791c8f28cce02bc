"""The bit-for-bit check of a final checkpoint (schooner_train.verify, --verify-restore): it
finds a single flipped bit, a missing or extra key, a changed dtype or value, and passes an
equal state; the trainer's torch.save baseline runs with it and says so in its record, and a
checkpoint file changed behind the trainer's back is caught."""
import json
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
PY = os.path.dirname(HERE)


@unittest.skipIf(torch is None, "PyTorch is not installed")
class DifferencesTest(unittest.TestCase):
    def state(self):
        g = torch.Generator().manual_seed(0)
        return {"model": {"w": torch.randn(4, 3, generator=g), "b": torch.tensor([float("nan"), -0.0])},
                "optimizer": {"stage-0": {"state": {0: {"step": torch.tensor(3.0)}},
                                          "param_groups": [{"lr": 1e-4, "betas": (0.9, 0.999)}]}},
                "iteration": 7}

    def test_an_equal_state_has_no_differences(self):
        from schooner_train.verify import differences

        got = self.state()
        got["optimizer"]["stage-0"]["param_groups"][0]["betas"] = [0.9, 0.999]  # as JSON gives it back
        self.assertEqual(differences(self.state(), got), [])

    def test_each_kind_of_difference_is_named(self):
        from schooner_train.verify import differences

        cases = {
            "one bit": (lambda s: s["model"]["w"].view(-1).view(torch.int32).__setitem__(5, s["model"]["w"].view(-1).view(torch.int32)[5] ^ 1),
                        "state.model.w: values differ"),
            "sign of zero": (lambda s: s["model"]["b"].__setitem__(1, 0.0), "state.model.b: values differ"),
            "missing": (lambda s: s["model"].pop("b"), "state.model.b: missing from the restore"),
            "extra": (lambda s: s.__setitem__("rng", 1), "state.rng: in the restore only"),
            "dtype": (lambda s: s["model"].__setitem__("w", s["model"]["w"].double()), "state.model.w: torch.float32[4, 3] restored as torch.float64[4, 3]"),
            "value": (lambda s: s.__setitem__("iteration", 6), "state.iteration: 7 restored as 6"),
            "step": (lambda s: s["optimizer"]["stage-0"]["state"][0]["step"].add_(1), "state.optimizer.stage-0.state.0.step: values differ"),
        }
        for name, (change, want) in cases.items():
            with self.subTest(name):
                got = self.state()
                change(got)
                self.assertEqual(differences(self.state(), got), [want])

    def test_poisoned_copies_differ_everywhere(self):
        # What the async_save check loads into: a tensor the load leaves alone must not pass.
        from schooner_train.checkpointing import _poisoned
        from schooner_train.verify import differences

        live = {"f": torch.zeros(3), "i": torch.arange(4), "b": torch.tensor([True, False]), "n": 5}
        self.assertEqual(sorted(differences(live, _poisoned(live))),
                         ["state.b: values differ", "state.f: values differ", "state.i: values differ"])


@unittest.skipIf(torch is None, "PyTorch is not installed")
class TrainerVerifiesTest(unittest.TestCase):
    def run_trainer(self, save_dir, out):
        env = dict(os.environ, PYTHONPATH=PY, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1", SCHOONER_CHECKPOINT_EVERY="3",
                   SCHOONER_MICRO_BATCH="2", SCHOONER_GLOBAL_BATCH="4")
        return subprocess.run([sys.executable, "-m", "schooner_train.train", "--name", "tiny", "--layers", "2", "--hidden", "32",
                               "--heads", "2", "--ffn", "64", "--vocab", "64", "--seq-len", "16", "--iterations", "5",
                               "--warmup", "0", "--torch-save-dir", save_dir, "--verify-restore", "--measure-out", out],
                              env=env, capture_output=True, text=True, timeout=300)

    def test_the_torch_save_baseline_reads_its_final_checkpoint_back(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "m.jsonl")
            p = self.run_trainer(d, out)
            self.assertEqual(p.returncode, 0, p.stderr)
            rec = json.loads(open(out).read().splitlines()[-1])
            self.assertIs(rec["restore_verified"], True, p.stderr)
            self.assertIn("restore of step 5 (torch.save): equal bit for bit", p.stderr)

    def test_a_checkpoint_changed_behind_the_trainer_is_caught(self):
        from schooner_train.checkpointing import TorchSaveCheckpoints

        with tempfile.TemporaryDirectory() as d:
            m = TorchSaveCheckpoints(d, 0)
            state = {"model": {"w": torch.ones(3)}, "iteration": 4}
            m.save(state, 4, urgent=False, final=True)
            self.assertEqual(m.check_restore(state, 4), [])
            torch.save({"model": {"w": torch.tensor([1.0, 1.0, 1.0 + 2 ** -20])}, "iteration": 4}, m.path)
            self.assertEqual(m.check_restore(state, 4), ["state.model.w: values differ"])


if __name__ == "__main__":
    unittest.main()
