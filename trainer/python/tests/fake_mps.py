"""A stand-in nvidia-cuda-mps-control on PATH, for the tests of what starts a private MPS server
on a machine that has none."""

import os

import pytest

from schooner_interfere.mps import CONTROL


def put_control(tmp_path, monkeypatch, body: str):
    """Puts a control program running the shell lines body first on PATH."""
    prog = tmp_path / "bin" / CONTROL
    prog.parent.mkdir()
    prog.write_text("#!/bin/sh\n" + body)
    prog.chmod(0o755)
    monkeypatch.setenv("PATH", f"{prog.parent}{os.pathsep}{os.environ['PATH']}")


@pytest.fixture
def control(tmp_path, monkeypatch):
    """A stand-in nvidia-cuda-mps-control that logs its arguments, stdin and pipe folder."""
    log = tmp_path / "calls.log"
    put_control(tmp_path, monkeypatch, f'in=$(cat)\necho "$* | $in | $CUDA_MPS_PIPE_DIRECTORY" >> {log}\n')
    return log
