"""Generator states survive a checkpoint's flattening: a restored run draws the same numbers."""
import random
import unittest

try:
    import torch
except ImportError:
    torch = None


@unittest.skipIf(torch is None, "PyTorch is not installed")
class RNGTest(unittest.TestCase):
    def test_restore_draws_what_the_uninterrupted_run_draws(self):
        from schooner_ckpt import rng
        from schooner_ckpt.tree import flatten, unflatten

        torch.manual_seed(3)
        random.seed(4)
        try:
            import numpy as np
            np.random.seed(5)
        except ImportError:
            np = None
        saved = rng.capture()
        tree, tensors = flatten(saved, torch.is_tensor)  # what a save keeps
        want = (torch.rand(4), torch.nn.functional.dropout(torch.ones(8), 0.5), random.random(), np.random.rand() if np else None)
        torch.rand(100)
        random.random()
        rng.restore(unflatten(tree, {n: t.clone() for n, t in tensors}))
        got = (torch.rand(4), torch.nn.functional.dropout(torch.ones(8), 0.5), random.random(), np.random.rand() if np else None)
        self.assertTrue(torch.equal(got[0], want[0]))
        self.assertTrue(torch.equal(got[1], want[1]))
        self.assertEqual(got[2], want[2])
        self.assertEqual(got[3], want[3])


if __name__ == "__main__":
    unittest.main()
