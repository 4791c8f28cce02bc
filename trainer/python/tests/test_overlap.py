import unittest

from .agent_env import OneRankTest, needs_agent, next_step

try:
    import torch
except ImportError:  # the core is tested without torch; this layer only where it is installed
    torch = None


def _train_and_save(ckpt, client, device, every=2, iterations=7, buffers=2, snapshot="auto"):
    """Trains a small model with Adam, saving through an OverlappedSaver every `every` steps;
    returns the saver (flushed) and, per saved step, a copy of the state as it was then."""
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 64)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    saver = ckpt.OverlappedSaver(client, prefix="", buffers=buffers, device_snapshot=snapshot)
    expect = {}
    base = next_step()
    for it in range(iterations):
        model(torch.randn(16, 64, device=device)).pow(2).mean().backward()
        saver.before_update()
        opt.step()
        opt.zero_grad()
        if it == 0:
            saver.prepare({"model": model.state_dict(), "optimizer": opt.state_dict()})
        if it % every == 0:
            step = base + it
            state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "iteration": step}
            expect[step] = {k: v.detach().clone().cpu() for k, v in model.state_dict().items()}
            expect[step]["exp_avg"] = opt.state_dict()["state"][0]["exp_avg"].clone().cpu()
            saver.start(state, step)
    saver.flush()
    return saver, expect


@needs_agent
@unittest.skipIf(torch is None, "PyTorch is not installed")
class OverlappedSaverTest(OneRankTest):
    def check_steps(self, expect, device):
        for step, want in expect.items():
            self.client.wait(step)
            back = self.ckpt.load(step, client=self.client)
            self.assertEqual(back["iteration"], step)
            for k, v in want.items():
                got = back["optimizer"]["state"][0]["exp_avg"] if k == "exp_avg" else back["model"][k]
                self.assertTrue(torch.equal(got.cpu(), v), f"step {step}: {k} is not the state at the save")

    def test_every_save_holds_the_state_of_its_step_although_training_went_on(self):
        saver, expect = _train_and_save(self.ckpt, self.client, "cpu")
        self.addCleanup(saver.close)
        self.assertEqual(saver.accepted, max(expect))
        self.assertEqual(saver.stats.saves, len(expect))
        self.assertEqual(len(saver.stats.handed_s), len(expect))
        self.check_steps(expect, "cpu")

    def test_one_buffer_makes_saves_wait_for_each_other_and_loses_none(self):
        saver, expect = _train_and_save(self.ckpt, self.client, "cpu", every=1, iterations=5, buffers=1)
        self.addCleanup(saver.close)
        self.assertEqual(len(saver.stats.backpressure_s), 5)
        self.assertEqual(saver.accepted, max(expect))
        self.check_steps(expect, "cpu")

    def test_a_save_that_fails_in_the_background_is_raised_to_the_loop(self):
        saver = self.ckpt.OverlappedSaver(self.client, prefix="")
        saver._conn.close()  # the saves' connection breaks: the agent never gets the step
        saver.start({"w": torch.ones(8)}, next_step())
        with self.assertRaisesRegex(RuntimeError, "background checkpoint save failed"):
            saver.flush(timeout=30)
        with self.assertRaisesRegex(RuntimeError, "background checkpoint save failed"):
            saver.start({"w": torch.ones(8)}, next_step())
        saver.close()

    def test_bad_arguments_are_refused(self):
        with self.assertRaisesRegex(ValueError, "buffers"):
            self.ckpt.OverlappedSaver(self.client, buffers=0)
        with self.assertRaisesRegex(ValueError, "chunk_bytes"):
            self.ckpt.OverlappedSaver(self.client, chunk_bytes=10)
        with self.assertRaisesRegex(ValueError, "device_snapshot"):
            self.ckpt.OverlappedSaver(self.client, device_snapshot="maybe")

    @unittest.skipUnless(torch is not None and torch.cuda.is_available(), "no CUDA device")
    def test_cuda_copies_go_beside_the_next_iteration_into_page_locked_memory(self):
        saver, expect = _train_and_save(self.ckpt, self.client, "cuda")
        self.addCleanup(saver.close)
        self.assertTrue(saver.stats.pinned, "the buffers were page-locked, so the copies are asynchronous")
        self.check_steps(expect, "cuda")

    @unittest.skipUnless(torch is not None and torch.cuda.is_available(), "no CUDA device")
    def test_cuda_saves_through_a_device_snapshot_hold_their_step_and_straight_ones_too(self):
        # The host copies from the snapshot run while the next steps change the originals. (A
        # save every 2 steps: the agent keeps a few steps only, so the checks must find them.)
        for mode, snapped in (("on", True), ("off", False)):
            saver, expect = _train_and_save(self.ckpt, self.client, "cuda", snapshot=mode)
            self.addCleanup(saver.close)
            self.assertEqual(saver.stats.device_snapshot, snapped, mode)
            self.check_steps(expect, "cuda")


class SnapshotTest(unittest.TestCase):
    def test_host_copies_of_a_snapshot_cover_runs_of_its_tensors_and_never_a_host_entry(self):
        from schooner_ckpt.overlap import _runs

        index = [{"offset": 0, "length": 100}, {"offset": 128, "length": 50}, {"offset": 192, "length": 10},
                 {"offset": 256, "length": 0}, {"offset": 256, "length": 64}, {"offset": 320, "length": 8}]
        cuda = [(0, 100), (128, 50), (256, 64), (320, 8)]  # the entry at 192 is filled on the host
        self.assertEqual(_runs(cuda, index), [(0, 178), (256, 328)])
        self.assertEqual(_runs([], index), [])

    @unittest.skipIf(torch is None, "PyTorch is not installed")
    def test_a_snapshot_holds_every_tensors_bytes_at_its_offset(self):
        from schooner_ckpt.overlap import _stage

        g = torch.Generator().manual_seed(1)
        tensors = [torch.randn(37, generator=g), torch.randint(-9, 9, (16,), generator=g, dtype=torch.int64),
                   torch.tensor(3.0), torch.randn(4, 6, generator=g).t()[1:]]  # odd length, int64, 4 bytes, a view
        raws, off = [], 0
        for t in tensors:
            raw = t.contiguous().reshape(-1).view(torch.uint8)
            raws.append((raw, off, raw.numel()))
            off = (off + raw.numel() + 63) // 64 * 64
        snap = torch.zeros(off, dtype=torch.uint8)
        _stage(snap, raws)
        for raw, o, n in raws:
            self.assertTrue(torch.equal(snap[o : o + n], raw))

class SnapshotFitsTest(unittest.TestCase):
    def test_auto_takes_a_snapshot_only_with_room_to_spare(self):
        from schooner_ckpt.overlap import snapshot_fits

        gib = 1 << 30
        self.assertTrue(snapshot_fits(free=40 * gib, total=80 * gib, size=17 * gib))
        self.assertFalse(snapshot_fits(free=20 * gib, total=80 * gib, size=17 * gib), "5% of 80 GiB and 1 GiB must stay")
        self.assertFalse(snapshot_fits(free=17 * gib, total=80 * gib, size=17 * gib))


if __name__ == "__main__":
    unittest.main()
