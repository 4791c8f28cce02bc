"""Switches the GEMM splitter on in the best-effort program the colocation runtime starts.

The runtime puts this folder first on PYTHONPATH of the BE side only; Python imports
sitecustomize at start, so an unmodified program runs with its large products cut to the
runtime's budget. SCHOONER_COLOCATE_SPLIT=0 leaves them whole; =kernels cuts them from kernels
registered in place of CUDA's for aten::mm, addmm and bmm instead of a dispatch mode, which
costs every other operator a call into Python (schooner_colocate.split). A sitecustomize the
program's environment already had is imported after this one.
"""
import importlib.util
import os
import sys


def _start():
    how = os.environ.get("SCHOONER_COLOCATE_SPLIT", "1")
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
    if how == "kernels":
        # Process-wide: every thread's products, no other operator touched.
        sys.modules[__name__].splitter = register(target, key=os.environ.get("SCHOONER_COLOCATE_SPLIT_KEY", "CUDA"))
    else:
        # In this thread and every thread the program starts (a dispatch mode is per thread).
        sys.modules[__name__].splitter = install(target)


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
