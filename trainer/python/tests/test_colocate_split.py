"""The best-effort side's GEMM splitter, on CPU: the products it cuts are the same products."""
import os
import re
import struct
import subprocess
import sys
import tempfile
import unittest

import torch

from schooner_colocate.board import Board, BUDGET_OFFSET, MAGIC, VERSION
from schooner_colocate.split import GemmSplitter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def splitter(target_s=1e-9, learn=1, **kw):
    # A tiny target cuts every large product as finely as MIN_ROWS allows; one product learns.
    return GemmSplitter(lambda: target_s, min_rows=16, min_flops=2 * 32 ** 3, learn=learn, **kw)


class SplitTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)

    def run_mode(self, mode, fn):
        with mode:
            return fn()

    def test_mm_addmm_bmm_are_the_same_products_in_pieces(self):
        a, b = torch.randn(256, 96, dtype=torch.float64), torch.randn(96, 80, dtype=torch.float64)
        bias_row, bias_full = torch.randn(80, dtype=torch.float64), torch.randn(256, 80, dtype=torch.float64)
        x, y = torch.randn(8, 64, 48, dtype=torch.float64), torch.randn(8, 48, 40, dtype=torch.float64)
        mode = splitter()
        # The first large product of a dtype runs whole (timed); the next ones are cut.
        self.run_mode(mode, lambda: a @ b)
        self.assertEqual(mode.split, 0)
        got = self.run_mode(mode, lambda: (a @ b, torch.addmm(bias_row, a, b), torch.addmm(bias_full, a, b, beta=0.5, alpha=2), torch.bmm(x, y)))
        want = (a @ b, torch.addmm(bias_row, a, b), torch.addmm(bias_full, a, b, beta=0.5, alpha=2), torch.bmm(x, y))
        for g, w in zip(got, want):
            self.assertEqual(g.shape, w.shape)
            self.assertTrue(torch.allclose(g, w, rtol=1e-12, atol=1e-12))
        self.assertEqual(mode.split, 4)
        self.assertEqual(mode.pieces, 3 * (256 // 16) + 8)

    def test_a_training_step_gets_the_same_gradients(self):
        model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 32)).double()
        x, target = torch.randn(512, 64, dtype=torch.float64), torch.randn(512, 32, dtype=torch.float64)

        def step():
            model.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), target)
            loss.backward()
            return loss.detach().clone(), [p.grad.clone() for p in model.parameters()]

        want_loss, want_grads = step()
        mode = splitter()
        self.run_mode(mode, step)  # learns the rate
        got_loss, got_grads = self.run_mode(mode, step)
        self.assertGreater(mode.split, 3, "forward and backward products were cut")
        self.assertTrue(torch.allclose(got_loss, want_loss, rtol=1e-12))
        for g, w in zip(got_grads, want_grads):
            self.assertTrue(torch.allclose(g, w, rtol=1e-10, atol=1e-12))

    def test_the_rate_is_the_best_of_the_first_products(self):
        a, b = torch.randn(256, 96), torch.randn(96, 80)
        mode = splitter(learn=3)
        self.run_mode(mode, lambda: (a @ b, a @ b, a @ b))
        self.assertEqual((mode.split, mode.timed), (0, {("cpu", torch.float32): 3}), "three run whole, timed")
        best = mode.rates[("cpu", torch.float32)]
        self.run_mode(mode, lambda: a @ b)
        self.assertEqual(mode.split, 1, "the fourth is cut")
        self.assertEqual(mode.rates[("cpu", torch.float32)], best, "no more timing after the first three")

    def test_short_products_and_long_targets_leave_products_whole(self):
        a, b = torch.randn(256, 96), torch.randn(96, 80)
        mode = GemmSplitter(lambda: 10.0, min_rows=16, min_flops=2 * 32 ** 3, learn=1)
        self.run_mode(mode, lambda: (a @ b, a @ b))
        self.assertEqual(mode.split, 0, "a 10 s target cuts nothing")
        small = GemmSplitter(lambda: 1e-9, learn=1)
        self.run_mode(small, lambda: (a @ b, a @ b))
        self.assertEqual(small.split, 0, "below MIN_FLOPS")


class BoardTest(unittest.TestCase):
    def test_reads_the_budget_and_refuses_what_is_not_a_board(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "board")
            mem = bytearray(256)
            struct.pack_into("<QII", mem, 0, MAGIC, VERSION, 132)
            struct.pack_into("<q", mem, BUDGET_OFFSET, 250_000)
            with open(path, "wb") as f:
                f.write(mem)
            self.assertAlmostEqual(Board.open(path).budget_s(), 250e-6)
            struct.pack_into("<I", mem, 8, VERSION + 1)
            with open(path, "wb") as f:
                f.write(mem)
            self.assertIsNone(Board.open(path), "another version")
            self.assertIsNone(Board.open(os.path.join(d, "missing")))

    def test_the_layout_is_the_headers(self):
        # board.h is what the shim and the supervisor map; this reader must follow its version
        # and the offset of budget_ns, or it refuses every real board.
        header = os.path.join(os.path.dirname(__file__), "..", "..", "..", "gpu", "colocate", "board.h")
        with open(header) as f:
            text = f.read()
        self.assertEqual(VERSION, int(re.search(r"#define SCH_BOARD_VERSION (\d+)", text).group(1)))
        body = text[text.index("typedef struct {"):text.index("} sch_board;")]
        offset = 0
        for m in re.finditer(r"^\s*(u?int(?:64|32)_t) ([a-z_]+)", body, re.M):
            if m.group(2) == "budget_ns":
                break
            offset += 8 if "64" in m.group(1) else 4
        self.assertEqual(BUDGET_OFFSET, offset)


# register() replaces the kernels of aten::mm, addmm and bmm for the whole process: each check
# runs in a process of its own, on the CPU key (the runtime registers on CUDA).
KERNELS_CHECK = "\n".join([
    "import torch, threading",
    "from schooner_colocate import split",
    "torch.manual_seed(0)",
    "s = split.register(lambda: 1e-9, key='CPU', min_rows=16, min_flops=2 * 32 ** 3, learn=1)",
    "a, b = torch.randn(256, 96, dtype=torch.float64), torch.randn(96, 80, dtype=torch.float64)",
    "bias_row, bias_full = torch.randn(80, dtype=torch.float64), torch.randn(256, 80, dtype=torch.float64)",
    "x, y = torch.randn(8, 64, 48, dtype=torch.float64), torch.randn(8, 48, 40, dtype=torch.float64)",
    "a @ b",  # learns the rate
    "assert s.split == 0",
    "got = (a @ b, torch.addmm(bias_row, a, b), torch.addmm(bias_full, a, b, beta=0.5, alpha=2), torch.bmm(x, y))",
    "want = (a.double().numpy() @ b.numpy(), bias_row.numpy() + a.numpy() @ b.numpy(),",
    "        0.5 * bias_full.numpy() + 2 * (a.numpy() @ b.numpy()), x.numpy() @ y.numpy())",
    "import numpy as np",
    "assert all(np.allclose(g.numpy(), w, rtol=1e-12, atol=1e-12) for g, w in zip(got, want))",
    "assert s.split == 4 and s.pieces == 3 * (256 // 16) + 8, (s.split, s.pieces)",
    # a training step's backward products, in the autograd engine's thread, and a thread's own
    "model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 32)).double()",
    "xs = torch.randn(512, 64, dtype=torch.float64)",
    "before = s.split",
    "t = threading.Thread(target=lambda: model(xs).square().mean().backward()); t.start(); t.join()",
    "assert s.split - before >= 4, s.split - before",
    "assert all(p.grad is not None for p in model.parameters())",
    "print('ok')",
])


class KernelsTest(unittest.TestCase):
    def test_registered_kernels_cut_the_same_products_in_every_thread(self):
        env = dict(os.environ, PYTHONPATH=ROOT)
        out = subprocess.run([sys.executable, "-c", KERNELS_CHECK], env=env, capture_output=True, text=True)
        self.assertEqual(out.stdout.strip(), "ok", out.stderr)


class BootTest(unittest.TestCase):
    def test_sitecustomize_switches_the_splitter_on_for_the_be_side_only(self):
        code = "import sitecustomize as s; print(type(getattr(s, 'splitter', None)).__name__)"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "schooner_colocate", "boot"), ROOT]))
        env.pop("SCHOONER_COLOCATE_BOARD", None)
        for role, want in (("be", "GemmSplitter"), ("hp", "NoneType")):
            env["SCHOONER_COLOCATE_ROLE"] = role
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
            self.assertEqual(out.stdout.strip(), want, out.stderr)
        # By default (and =kernels) it registers the cutting kernels (here on CPU's key); =mode
        # (or =1) enters a dispatch mode instead; =0 leaves the products whole.
        code = "\n".join(["import sitecustomize as s, torch",
                           "from torch.utils._python_dispatch import _get_current_dispatch_mode",
                           "print(type(getattr(s, 'splitter', None)).__name__, _get_current_dispatch_mode() is None)"])
        env.update(SCHOONER_COLOCATE_ROLE="be", SCHOONER_COLOCATE_SPLIT_KEY="CPU")
        for how, want in ((None, "GemmSplitter True"), ("kernels", "GemmSplitter True"),
                          ("mode", "GemmSplitter False"), ("1", "GemmSplitter False"), ("0", "NoneType True")):
            env.pop("SCHOONER_COLOCATE_SPLIT", None)
            if how is not None:
                env["SCHOONER_COLOCATE_SPLIT"] = how
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
            self.assertEqual(out.stdout.strip(), want, f"SCHOONER_COLOCATE_SPLIT={how}: {out.stderr}")

    def test_the_splitter_cuts_in_threads_the_program_starts(self):
        # The interference study's best-effort loop runs in a thread of its own: a dispatch mode
        # entered only in the main thread left its products whole under the runtime.
        code = "\n".join([
            "import sitecustomize as s, threading, torch",
            "from schooner_colocate import split",
            "a, b = torch.randn(1024, 512), torch.randn(512, 512)",
            "got = {}",
            "def loop():",
            "    for _ in range(split.LEARN + 1): a @ b",
            "    got['split'] = sum(m.split for m in split.splitters if m is not s.splitter)",
            "t = threading.Thread(target=loop); t.start(); t.join()",
            "print(got['split'], s.splitter.split, len(split.splitters))",
        ])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "schooner_colocate", "boot"), ROOT]),
                   SCHOONER_COLOCATE_ROLE="be", SCHOONER_COLOCATE_SPLIT="mode", SCHOONER_COLOCATE_SPLIT_US="0.001")
        env.pop("SCHOONER_COLOCATE_BOARD", None)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        in_thread, in_main, count = (int(x) for x in out.stdout.split())
        self.assertEqual((in_thread, in_main, count), (1, 0, 2), "the thread's product after the learning ones is cut: " + out.stderr)


if __name__ == "__main__":
    unittest.main()
