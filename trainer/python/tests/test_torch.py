import unittest

from .agent_env import OneRankTest, needs_agent, next_step

try:
    import torch
except ImportError:  # the core is tested without torch; this layer only where it is installed
    torch = None


@needs_agent
@unittest.skipIf(torch is None, "PyTorch is not installed")
class TorchTest(OneRankTest):
    def test_model_and_optimizer_round_trip(self):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        model(torch.randn(5, 8)).sum().backward()
        opt.step()
        state = {
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "iteration": 7,
            "misc": {"half": torch.arange(6, dtype=torch.float16).reshape(2, 3)[:, 1:], "bf": torch.ones(3, dtype=torch.bfloat16),
                     "mask": torch.tensor([True, False]), "scalar": torch.tensor(3.5)},
        }
        step = next_step()
        self.ckpt.save(state, step, client=self.client, extra={"iteration": "7"})
        self.client.wait(step)
        back, meta = self.ckpt.load(step, client=self.client, return_meta=True)
        self.assertEqual(meta.extra, {"iteration": "7"})
        self.assertEqual(back["iteration"], 7)
        for k, v in state["model"].items():
            self.assertTrue(torch.equal(back["model"][k], v), k)
        for k, v in state["misc"].items():
            self.assertEqual(back["misc"][k].dtype, v.dtype, k)
            self.assertTrue(torch.equal(back["misc"][k], v), k)
        model2 = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
        model2.load_state_dict(back["model"])
        opt2 = torch.optim.AdamW(model2.parameters(), lr=1e-3)
        opt2.load_state_dict(back["optimizer"])
        self.assertEqual(opt2.state_dict()["param_groups"], opt.state_dict()["param_groups"])

    def test_restored_tensors_view_one_mapping_that_lives_as_long_as_they_do(self):
        # A restore hands out views of the agent's file, not copies: a slice kept after
        # everything else is dropped still reads the checkpoint, and writing into a restored
        # tensor changes neither the checkpoint nor the next restore.
        import gc

        step = next_step()
        self.ckpt.save({"w": torch.arange(1 << 16, dtype=torch.float32), "b": torch.ones(3, dtype=torch.bfloat16)}, step, client=self.client)
        self.client.wait(step)
        back = self.ckpt.load(step, client=self.client)
        kept = back["w"][-4:]
        back["w"][-1] = -1.0
        del back
        gc.collect()
        self.assertEqual(kept.tolist(), [65532.0, 65533.0, 65534.0, -1.0])
        again = self.ckpt.load(step, client=self.client)
        self.assertEqual(again["w"][-1].item(), 65535.0)
        self.assertTrue(torch.equal(again["b"], torch.ones(3, dtype=torch.bfloat16)))

    def test_prepare_allocates_the_buffer_and_slots_before_the_first_save(self):
        model = torch.nn.Linear(256, 256)
        opt = torch.optim.Adam(model.parameters())
        model(torch.randn(4, 256)).sum().backward()
        opt.step()
        state = {"model": model.state_dict(), "optimizer": opt.state_dict()}
        size = self.ckpt.prepare(state, client=self.client)
        self.assertGreater(size, 3 * 256 * 257 * 4, "weights and both Adam moments")
        buf = self.client._buf
        self.assertIsNotNone(buf, "the shared-memory buffer exists before the first save")
        self.assertGreaterEqual(buf.size, size)
        step = next_step()
        self.ckpt.save(state, step, client=self.client)
        self.assertIs(self.client._buf, buf, "the first save reused the prepared buffer")
        self.client.wait(step)
        back = self.ckpt.load(step, client=self.client)
        self.assertTrue(torch.equal(back["model"]["weight"], state["model"]["weight"]))

    @unittest.skipUnless(torch is not None and torch.cuda.is_available(), "no CUDA device")
    def test_cuda_tensors_go_straight_to_shared_memory(self):
        state = {"w": torch.randn(1024, 1024, device="cuda"), "b": torch.randn(7, device="cuda", dtype=torch.bfloat16)}
        step = next_step()
        self.ckpt.save(state, step, client=self.client)
        self.client.wait(step)
        back = self.ckpt.load(step, client=self.client, map_location="cuda")
        for k, v in state.items():
            self.assertEqual(back[k].device.type, "cuda")
            self.assertTrue(torch.equal(back[k], v), k)

    def test_layers_from_names(self):
        self.assertEqual(self.ckpt.torch_state.default_layer_of("model.layers.12.mlp.weight"), 12)
        self.assertEqual(self.ckpt.torch_state.default_layer_of("transformer.h.3.attn.c_attn.weight"), 3)
        self.assertIsNone(self.ckpt.torch_state.default_layer_of("lm_head.weight"))
        step = next_step()
        state = {"layers.0.w": torch.ones(2), "layers.1.w": torch.zeros(2), "head": torch.full((2,), 2.0)}
        self.ckpt.save(state, step, client=self.client)
        self.client.wait(step)
        tensors, _ = self.ckpt.load_tensors(step, layers=(1, 2), client=self.client)
        self.assertEqual(sorted(tensors), ["head", "layers.1.w"])


if __name__ == "__main__":
    unittest.main()
