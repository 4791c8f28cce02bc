"""The reference trainer's layout rules (schooner_train.layout): pure Python, no torch."""

import json
import unittest

from schooner_train import layout


class LayoutTest(unittest.TestCase):
    def test_even_split_gives_extra_layers_to_later_stages(self):
        self.assertEqual(layout.even_split(26, 2), ((0, 13), (13, 26)))
        self.assertEqual(layout.even_split(14, 3), ((0, 4), (4, 9), (9, 14)))

    def test_rank_places_tp_innermost_then_dp_then_stage(self):
        env = {"SCHOONER_DP": "2", "SCHOONER_PP": "2", "SCHOONER_TP": "2", "RANK": "5", "WORLD_SIZE": "8",
               "SCHOONER_MICRO_BATCH": "2", "SCHOONER_GLOBAL_BATCH": "16"}
        lay = layout.from_env(26, env)
        self.assertEqual((lay.stage, lay.dp_rank, lay.tp_rank), (1, 0, 1))
        self.assertEqual(lay.rank_of(1, 0, 1), 5)
        self.assertEqual(lay.microbatches, 4)

    def test_stages_come_from_the_assignment(self):
        plan = {"plan": {"stages": [{"first": 0, "end": 5}, {"first": 5, "end": 26}]}}
        env = {"SCHOONER_PP": "2", "WORLD_SIZE": "2", "SCHOONER_PLAN_JSON": json.dumps(plan)}
        self.assertEqual(layout.from_env(26, env).stages, ((0, 5), (5, 26)))

    def test_bad_layouts_are_refused_with_the_reason(self):
        with self.assertRaisesRegex(ValueError, "WORLD_SIZE is 1 but SCHOONER_PP×DP×TP is 2×1×1=2"):
            layout.from_env(26, {"SCHOONER_PP": "2", "WORLD_SIZE": "1"})
        with self.assertRaisesRegex(ValueError, "do not cover"):
            layout.from_env(26, {"SCHOONER_PP": "2", "WORLD_SIZE": "2", "SCHOONER_STAGES": "0:10,11:26"})
        with self.assertRaisesRegex(ValueError, "not a multiple"):
            layout.from_env(26, {"SCHOONER_MICRO_BATCH": "3", "SCHOONER_GLOBAL_BATCH": "8"})


if __name__ == "__main__":
    unittest.main()
