import array
import os
import struct
import unittest

from schooner_ckpt import NO_LAYER, AgentError, Client, Entry, NoCheckpoint

from .agent_env import SOCKET, needs_agent, next_step


def sample_entries(step):
    w = array.array("f", [float(i) * 0.5 + step for i in range(1000)])
    return [
        Entry("layers.0.weight", 0, "F32", (10, 100), w),
        Entry("layers.1.bias", 1, "BF16", (3,), bytes([1, 2, 3, 4, 5, 6])),
        Entry("step", NO_LAYER, "I64", (), struct.pack("<q", step)),
        Entry("empty", NO_LAYER, "F32", (0, 4), b""),
    ]


@needs_agent
class ClientTest(unittest.TestCase):
    def setUp(self):
        self.c = Client(SOCKET, timeout=60)
        self.addCleanup(self.c.close)
        self.c.hello(rank=0, world=1, plan={"world": 1, "pp": 1, "dp": 1, "tp": 1})

    def test_save_wait_load_is_byte_exact(self):
        step = next_step()
        entries = sample_entries(step)
        self.assertFalse(self.c.save(step, entries, extra={"iteration": step}))
        self.assertEqual(self.c.wait(step), step)
        got = self.c.load(step)
        self.assertEqual(got.step, step)
        self.assertEqual(got.extra, {"iteration": str(step)})
        self.assertEqual([e.name for e in got.entries], [e.name for e in entries])
        for want, have in zip(entries, got.entries):
            self.assertEqual(have.layer, want.layer)
            self.assertEqual(have.dtype, want.dtype)
            self.assertEqual(have.shape, want.shape)
            self.assertEqual(have.data, bytes(memoryview(want.data).cast("B")), want.name)
        self.assertFalse(any("-load-" in n for n in os.listdir(self.c.shm_dir)), "restore files are removed")

    def test_buffer_grows_and_newest_step_loads(self):
        small, big = next_step(), next_step()
        self.c.save(small, [Entry("x", NO_LAYER, "U8", (16,), bytes(16))])
        data = bytes(range(256)) * 8192  # 2 MiB: past the first buffer
        self.c.save(big, [Entry("x", NO_LAYER, "U8", (len(data),), data)])
        self.c.wait(big)
        got = self.c.load(-1)
        self.assertEqual(got.step, big)
        self.assertEqual(got.entries[0].data, data)

    def test_layers_selection(self):
        step = next_step()
        self.c.save(step, sample_entries(step))
        self.c.wait(step)
        got = self.c.load(step, layers=(1, 2))
        self.assertEqual(sorted(e.name for e in got.entries), ["empty", "layers.1.bias", "step"])

    def test_poll_and_status(self):
        self.assertEqual(self.c.poll(), {"checkpoint_now": False, "deadline": None})
        st = self.c.status()
        self.assertEqual(st["mode"], "local")
        self.assertEqual(st["ranks"][0]["rank"], 0)

    def test_errors(self):
        with self.assertRaises(NoCheckpoint):
            self.c.load(10**9)
        with self.assertRaises(AgentError) as cm:
            self.c.wait(10**9)
        self.assertEqual(cm.exception.code, "bad_request")
        with self.assertRaisesRegex(ValueError, "needs 8 bytes"):
            self.c.save(next_step(), [Entry("w", NO_LAYER, "F32", (2,), b"123")])
        with self.assertRaisesRegex(ValueError, "unknown dtype"):
            self.c.save(next_step(), [Entry("w", NO_LAYER, "F8", (2,), b"12")])
        self.assertEqual(self.c.poll()["checkpoint_now"], False)  # still usable

    def test_save_before_hello(self):
        with Client(SOCKET) as c:
            with self.assertRaisesRegex(RuntimeError, "before hello"):
                c.save(1, [])


if __name__ == "__main__":
    unittest.main()
