import unittest

from schooner_ckpt.tree import flatten, unflatten


class Fake:
    """Stands in for a tensor."""

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, Fake) and other.v == self.v


def is_fake(x):
    return isinstance(x, Fake)


class TreeTest(unittest.TestCase):
    def test_round_trip_keeps_nesting_key_types_and_values(self):
        state = {
            "model": {"layers.0.weight": Fake(1), "layers.0.bias": Fake(2)},
            "optimizer": {
                "state": {0: {"step": Fake(3), "exp_avg": Fake(4)}, 1: {"step": Fake(5)}},
                "param_groups": [{"lr": 0.001, "betas": (0.9, 0.999), "params": [0, 1], "foreach": None, "name": "g"}],
            },
            "iteration": 1200,
            "rng": b"\x00\x01\xff",
            "flags": [True, False],
        }
        tree, tensors = flatten(state, is_fake)
        names = [n for n, _ in tensors]
        self.assertEqual(
            names,
            ["model/layers.0.weight", "model/layers.0.bias", "optimizer/state/0/step", "optimizer/state/0/exp_avg", "optimizer/state/1/step"],
        )
        back = unflatten(tree, dict(tensors))
        self.assertEqual(back, state)
        self.assertIsInstance(back["optimizer"]["param_groups"][0]["betas"], tuple)
        self.assertIn(0, back["optimizer"]["state"])  # int keys stay int

    def test_prefix_and_clashing_paths(self):
        tree, tensors = flatten({0: Fake(1), "0": Fake(2)}, is_fake, prefix="rank-3/")
        self.assertEqual([n for n, _ in tensors], ["rank-3/0", "rank-3/0#2"])
        self.assertEqual(unflatten(tree, dict(tensors)), {0: Fake(1), "0": Fake(2)})

    def test_lone_tensor(self):
        tree, tensors = flatten(Fake(9), is_fake, prefix="p/")
        self.assertEqual([n for n, _ in tensors], ["p"])
        self.assertEqual(unflatten(tree, dict(tensors)), Fake(9))

    def test_refuses_what_json_cannot_hold(self):
        with self.assertRaisesRegex(TypeError, "object at model/x"):
            flatten({"model": {"x": object()}}, is_fake)

    def test_missing_tensor_is_named(self):
        tree, _ = flatten({"w": Fake(1)}, is_fake)
        with self.assertRaisesRegex(KeyError, "w"):
            unflatten(tree, {})


if __name__ == "__main__":
    unittest.main()
