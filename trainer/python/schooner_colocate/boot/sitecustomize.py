"""Switches the GEMM splitter on in the best-effort program the colocation runtime starts.

The runtime puts this folder first on PYTHONPATH of the BE side only; Python imports
sitecustomize at start, so an unmodified program runs with its large products cut to the
runtime's budget, from kernels registered in place of CUDA's for aten::mm, addmm and bmm.
SCHOONER_COLOCATE_SPLIT=0 leaves them whole; =mode (or =1) cuts them from a dispatch mode
instead, which costs every other operator a call into Python (schooner_colocate.split): on an
H100 the training step under the runtime ran 120 steps/s with the mode and 175 with the kernels
(BENCHMARKS.md, colocation, 2026-12-06). A sitecustomize the program's environment already had
is imported after this one.
"""
import importlib.util
import os
import sys


def _start():
    how = os.environ.get("SCHOONER_COLOCATE_SPLIT", "kernels")
    if os.environ.get("SCHOONER_COLOCATE_ROLE") != "be" or how == "0":
        return
    try:
        import torch  # noqa: F401
    except ImportError:
        return  # not a torch program: nothing to cut
    from schooner_colocate.board import Board
    from schooner_colocate.split import install, register

    board = Board.from_env()
    fixed = float(os.environ.get("SCHOONER_COLOCATE_SPLIT_US", "100")) / 1e6
    target = board.budget_s if board else (lambda: fixed)
    if how in ("mode", "1"):
        # In this thread and every thread the program starts (a dispatch mode is per thread).
        sys.modules[__name__].splitter = install(target)
        return
    if how != "kernels":
        print(f"schooner_colocate: SCHOONER_COLOCATE_SPLIT={how!r} is not 0, kernels or mode: cutting "
              "from kernels", file=sys.stderr)
    # Process-wide: every thread's products, no other operator touched.
    sys.modules[__name__].splitter = register(target, key=os.environ.get("SCHOONER_COLOCATE_SPLIT_KEY", "CUDA"))


def _chain():
    """Runs the next sitecustomize on sys.path, which this one shadows."""
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if entry and os.path.abspath(entry) != here:
            path = os.path.join(entry, "sitecustomize.py")
            if os.path.isfile(path):
                spec = importlib.util.spec_from_file_location("_schooner_next_sitecustomize", path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return


_start()
_chain()
