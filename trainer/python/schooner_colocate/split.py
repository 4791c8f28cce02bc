"""Cuts a best-effort program's large matrix products into shorter kernels.

GemmSplitter is a TorchDispatchMode: it sees every aten.mm, aten.addmm and aten.bmm the
program runs, forward and backward (the autograd engine carries the mode to its threads), and
runs one whose estimated time exceeds the target as several products over row blocks (batch
blocks for bmm) written into the one output, so the results are the same products, the output
is allocated once, and bias epilogues stay fused. The estimate is the product's FLOPs over the
best rate measured on the first few large products of each device and dtype. The target is the runtime's
budget, read from the shared board at every large product, so it follows the supervisor.

A dispatch mode is thread-local: entered in the main thread it never sees the products of a
thread the program starts itself (the interference study's best-effort loop runs in one, and so
do many training loops). install() enters one in the calling thread and in every thread started
after it.

A dispatch mode also sees every other operator, and each costs a call into Python: about 5 µs an
operator on the dev machine, which a training step of a hundred small kernels pays a hundred
times. register() instead puts the same cutting in place of the device's kernels for aten::mm,
aten::addmm and aten::bmm alone (torch.library): no other operator changes, every thread and the
autograd engine's see it, and the pieces and the uncut products run through the .out overloads,
whose kernels stay the device's own.
"""
import math
import sys
import threading
import time
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten

# Row blocks smaller than this lose the GEMM's tensor-core tiles; a product is never cut finer.
MIN_ROWS = 128
# Products below this many FLOPs are never cut (nor timed): they are short on any GPU.
MIN_FLOPS = 2 * 512 ** 3
# The first large products of a device and dtype run whole and timed; the rate is the best of
# them. The first alone carries the library's start (handle, workspace, heuristics): its rate
# can be a tenth of the real one, and every product after it would be cut ten times too finely.
LEARN = 3


class GemmSplitter(TorchDispatchMode):
    """target_s: a callable giving the longest a product's kernel should run, in seconds."""

    def __init__(self, target_s, min_rows=MIN_ROWS, min_flops=MIN_FLOPS, learn=LEARN):
        super().__init__()
        self.target_s = target_s
        self.min_rows = min_rows
        self.min_flops = min_flops
        self.learn = learn
        self.rates = {}  # (device type, dtype) -> the best FLOP/s timed so far
        self.timed = {}  # (device type, dtype) -> products timed
        self.split = 0  # products cut
        self.pieces = 0  # kernels they became

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is aten.mm.default and not kwargs:
            return self.mm(*args, whole=func)
        if func is aten.addmm.default:
            return self.addmm(*args, kwargs, whole=func)
        if func is aten.bmm.default and not kwargs:
            return self._batches(*args, func=func)
        return func(*args, **kwargs)

    # The products, cut or whole: `whole` computes one uncut (the operator itself in a mode; its
    # .out overload from register()'s kernels, which replace the operator).
    def mm(self, a, b, whole):
        return self._rows(a, b, lambda a_, out: aten.mm.out(a_, b, out=out), None, whole, (a, b))

    def addmm(self, bias, a, b, kwargs, whole):
        beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
        return self._rows(a, b, lambda a_, out, bias_=bias: aten.addmm.out(bias_, a_, b, beta=beta, alpha=alpha, out=out),
                          bias, whole, (bias, a, b), kwargs)

    def _pieces(self, flops, key, run_whole, device):
        """How many pieces a product of flops should become; 1 when it is short. The first
        `learn` large products of a key run whole, timed from an idle device to the end of the
        product, to learn the rate (the result is returned with a count of 0)."""
        if self.timed.get(key, 0) < self.learn:
            if device.type == "cuda":
                torch.cuda.synchronize(device)  # time this product, not the work queued before it
            start = time.perf_counter()
            out = run_whole()
            if out.is_cuda:
                torch.cuda.synchronize(out.device)
            rate = flops / max(time.perf_counter() - start, 1e-9)
            self.rates[key] = max(rate, self.rates.get(key, 0.0))
            self.timed[key] = self.timed.get(key, 0) + 1
            return 0, out
        return max(1, math.ceil(flops / self.rates[key] / self.target_s())), None

    def _rows(self, a, b, piece, bias, func, args, kwargs=None):
        m, k = a.shape
        n = b.shape[1]
        flops = 2 * m * n * k
        if flops < self.min_flops or m < 2 * self.min_rows or a.dtype != b.dtype:
            return func(*args, **(kwargs or {}))
        count, whole = self._pieces(flops, (a.device.type, a.dtype), lambda: func(*args, **(kwargs or {})), a.device)
        if whole is not None:
            return whole
        count = min(count, m // self.min_rows)
        if count <= 1:
            return func(*args, **(kwargs or {}))
        out = torch.empty((m, n), dtype=a.dtype, device=a.device)
        rows = math.ceil(m / count)
        for i in range(0, m, rows):
            j = min(i + rows, m)
            if bias is not None and bias.dim() == 2 and bias.shape[0] == m:
                piece(a[i:j], out[i:j], bias[i:j])
            else:
                piece(a[i:j], out[i:j])
            self.pieces += 1
        self.split += 1
        return out

    def _batches(self, a, b, func):
        batch, m, k = a.shape
        n = b.shape[2]
        flops = 2 * batch * m * n * k
        if flops < self.min_flops or batch < 2 or a.dtype != b.dtype:
            return func(a, b)
        count, whole = self._pieces(flops, (a.device.type, a.dtype), lambda: func(a, b), a.device)
        if whole is not None:
            return whole
        count = min(count, batch)
        if count <= 1:
            return func(a, b)
        out = torch.empty((batch, m, n), dtype=a.dtype, device=a.device)
        step = math.ceil(batch / count)
        for i in range(0, batch, step):
            aten.bmm.out(a[i:i + step], b[i:i + step], out=out[i:i + step])
            self.pieces += 1
        self.split += 1
        return out


# Every splitter install() entered, one per thread, for whoever wants their counts.
splitters = []


class _ExitOnThreadEnd:
    """Leaves a thread's splitter as the thread ends. A mode still entered when its thread is
    torn down is released by the C++ side's thread-local destructor, outside the interpreter's
    lock: about one program in thirty then aborted at exit ("terminate called without an active
    exception"). Held in a threading.local, whose values the interpreter clears in the ending
    thread itself, with its lock held; the main thread's is cleared at interpreter exit."""

    def __init__(self, mode):
        self.mode = mode

    def __del__(self):
        try:
            self.mode.__exit__(None, None, None)
        except Exception:  # noqa: BLE001 — at teardown nothing is left to tell
            pass


_leaving = threading.local()


def install(target_s, **kw):
    """Enters a GemmSplitter(target_s, **kw) in the calling thread and arranges for every thread
    started afterwards to enter its own as it begins (through threading.setprofile, whose hook
    each new thread runs first: the hook enters the splitter and hands the thread the profile
    hook that was set before, or none). Returns the calling thread's splitter."""
    previous = threading.getprofile()

    def enter_here():
        mode = GemmSplitter(target_s, **kw)
        mode.__enter__()
        splitters.append(mode)
        _leaving.guard = _ExitOnThreadEnd(mode)
        return mode

    def hook(frame, event, arg):
        sys.setprofile(previous)
        enter_here()
        if previous is not None:
            return previous(frame, event, arg)
        return None

    mode = enter_here()
    threading.setprofile(hook)
    return mode


# The registrations of register(): they hold while this lives.
_library = None


def register(target_s, key="CUDA", **kw):
    """Cuts large products as GemmSplitter does, from kernels registered in place of the device's
    (dispatch key `key`) for aten::mm, aten::addmm and aten::bmm. Returns the splitter whose
    counts they keep. Once per process: a second call replaces the first's registrations."""
    global _library
    s = GemmSplitter(target_s, **kw)  # its cutting, never entered as a mode

    def mm(a, b):
        return s.mm(a, b, whole=_whole_mm)

    def addmm(bias, a, b, *, beta=1, alpha=1):
        return s.addmm(bias, a, b, {"beta": beta, "alpha": alpha}, whole=_whole_addmm)

    def bmm(a, b):
        return s._batches(a, b, func=_whole_bmm)

    lib = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Overriding a previously registered kernel.*")
        for name, fn in (("mm", mm), ("addmm", addmm), ("bmm", bmm)):
            lib.impl(name, fn, key)
    _library = lib
    splitters.append(s)
    return s


# An uncut product through the .out overload, whose kernel register() leaves alone.
def _whole_mm(a, b):
    return aten.mm.out(a, b, out=a.new_empty((a.shape[0], b.shape[1])))


def _whole_addmm(bias, a, b, beta=1, alpha=1):
    return aten.addmm.out(bias, a, b, beta=beta, alpha=alpha, out=a.new_empty((a.shape[0], b.shape[1])))


def _whole_bmm(a, b):
    return aten.bmm.out(a, b, out=a.new_empty((a.shape[0], a.shape[1], b.shape[2])))
