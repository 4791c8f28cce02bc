"""The private MPS server of the interference study and bench_disagg, on CPU through a stand-in
control program: started with folders of its own, shut down and its folders removed whatever
happens in the run."""

import os
import subprocess

import pytest

from schooner_interfere.mps import MpsServer, unavailable

from .fake_mps import control, put_control  # noqa: F401 (control: a fixture)


def test_the_mps_server_is_private_and_shut_down_even_when_the_run_fails(control):  # noqa: F811
    with pytest.raises(RuntimeError), MpsServer() as server:
        env = server.env()
        assert os.path.isdir(env["CUDA_MPS_PIPE_DIRECTORY"]) and os.path.isdir(env["CUDA_MPS_LOG_DIRECTORY"])
        assert "schooner-mps-" in env["CUDA_MPS_PIPE_DIRECTORY"]
        raise RuntimeError("the run failed")
    start, stop = control.read_text().splitlines()
    assert start.startswith("-d |") and start.endswith(env["CUDA_MPS_PIPE_DIRECTORY"])
    assert stop.startswith(" | quit") and stop.endswith(env["CUDA_MPS_PIPE_DIRECTORY"])
    assert not os.path.exists(env["CUDA_MPS_PIPE_DIRECTORY"]), "its folders are removed"


def test_a_server_whose_daemon_does_not_start_leaves_no_folders(tmp_path, monkeypatch):
    put_control(tmp_path, monkeypatch, "exit 3\n")
    server = MpsServer()
    with pytest.raises(Exception):
        server.__enter__()
    assert not os.path.exists(server.pipe)


def _failing_quit(tmp_path, monkeypatch):
    """A control program that starts but fails to quit."""
    put_control(tmp_path, monkeypatch, 'in=$(cat)\n[ "$in" = quit ] && exit 4\nexit 0\n')


def test_a_failed_run_keeps_its_own_error_when_the_daemon_will_not_quit(tmp_path, monkeypatch):
    _failing_quit(tmp_path, monkeypatch)
    with pytest.raises(RuntimeError, match="the run failed"), MpsServer():
        raise RuntimeError("the run failed")


def test_a_daemon_that_will_not_quit_after_a_good_run_is_an_error(tmp_path, monkeypatch):
    _failing_quit(tmp_path, monkeypatch)
    server = MpsServer()
    with pytest.raises(subprocess.CalledProcessError):
        with server:
            pass
    assert not os.path.exists(server.pipe), "its folders are removed either way"


def test_a_machine_without_the_control_program_is_told_why(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert unavailable() == "nvidia-cuda-mps-control is not installed"
    put_control(tmp_path, monkeypatch, "exit 0\n")
    assert unavailable() == ""
