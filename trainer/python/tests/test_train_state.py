"""What the reference trainer's whole training state holds: the model, the optimizer and the
random generators, each under the stage's own name, and how a restore puts the generators
back when the machine has another number of GPUs."""
import random
import unittest

try:
    import torch
except ImportError:
    torch = None


@unittest.skipIf(torch is None, "PyTorch is not installed")
class TrainStateTest(unittest.TestCase):
    def test_the_whole_state_carries_the_stage_generators(self):
        from schooner_train.train import checkpoint_state

        model = torch.nn.Linear(3, 2)
        opt = torch.optim.Adam(model.parameters())
        state = checkpoint_state(model, opt, 1, 7)
        self.assertEqual(sorted(state), ["iteration", "model", "optimizer", "rng"])
        self.assertEqual(sorted(state["rng"]), ["stage-1"])
        self.assertTrue(torch.equal(state["rng"]["stage-1"]["torch"], torch.get_rng_state()))
        self.assertNotIn("rng", checkpoint_state(model, None, 1, 7))  # the weights alone

    def test_generators_of_another_gpu_count_leave_cuda_and_restore_the_rest(self):
        from unittest import mock

        from schooner_ckpt import rng
        from schooner_train.train import restore_generators

        torch.manual_seed(11)
        random.seed(12)
        saved = rng.capture()
        saved["cuda"] = [torch.zeros(16, dtype=torch.uint8)] * 3
        want = (torch.rand(3), random.random())
        torch.rand(50)
        random.random()
        real = rng.restore
        calls = []

        def on_a_two_gpu_machine(d):  # what rng.restore says where CUDA has two devices
            calls.append(sorted(d))
            if "cuda" in d:
                raise ValueError("the checkpoint holds 3 CUDA generators, this machine has 2 devices")
            real(d)

        with mock.patch("schooner_train.train.rng.restore", on_a_two_gpu_machine):
            restore_generators(saved)
        self.assertEqual(len(calls), 2)
        self.assertNotIn("cuda", calls[1])
        got = (torch.rand(3), random.random())
        self.assertTrue(torch.equal(want[0], got[0]))
        self.assertEqual(want[1], got[1])


if __name__ == "__main__":
    unittest.main()
