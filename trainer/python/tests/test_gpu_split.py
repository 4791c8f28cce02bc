"""gpu_split: how bench_disagg's prompt and token pools share one GPU. The shares, the refusals
and each pool's environment run on CPU (the MPS server through a stand-in control program on
PATH; its own tests are test_interfere_mps.py); the split itself needs a GPU (bench/serving, on the GPU machine)."""

import contextlib
import os

import pytest

from schooner_interfere import mps
from schooner_serve import gpu_split

from .fake_mps import control  # noqa: F401 (a fixture)


def test_mps_gives_each_pool_its_share_of_the_threads_and_the_token_pool_the_rest():
    assert gpu_split.shares("mps", 0.5) == {"prompt": {"thread_pct": 50}, "token": {"thread_pct": 50}}
    assert gpu_split.shares("mps", 0.3) == {"prompt": {"thread_pct": 30}, "token": {"thread_pct": 70}}
    assert gpu_split.shares("time-slice", 0.3) == {}


def test_green_gives_each_pool_whole_groups_of_sms_that_do_not_overlap():
    s = gpu_split.shares("green", 0.5, 132)
    assert s == {"prompt": {"sms": 64}, "token": {"sms": 68}}
    assert gpu_split.shares("green", 0.25, 132)["prompt"]["sms"] == 32


@pytest.mark.parametrize("split,share,sms", [("mps", 0.0, 0), ("mps", 1.0, 0), ("mps", 0.001, 0),
                                             ("green", 0.02, 132), ("green", 0.98, 132), ("slices", 0.5, 0)])
def test_a_split_that_leaves_a_pool_nothing_is_refused(split, share, sms):
    with pytest.raises(ValueError):
        gpu_split.shares(split, share, sms)


def test_a_split_needs_a_gpu_and_says_so():
    assert gpu_split.unavailable("time-slice", "cpu") == ""
    assert "needs a CUDA GPU" in gpu_split.unavailable("mps", "cpu")
    assert "needs a CUDA GPU" in gpu_split.unavailable("green", "cpu")


def test_the_bench_refuses_a_split_this_machine_cannot_run_before_it_starts_anything(capsys):
    pytest.importorskip("torch")
    from schooner_serve import bench_disagg
    with pytest.raises(SystemExit):
        bench_disagg.main(["--smoke", "--split", "mps", "--out", os.devnull])
    assert "--split mps needs a CUDA GPU" in capsys.readouterr().err


def test_each_pool_joins_the_server_and_an_mps_split_limits_its_threads(control):  # noqa: F811
    with mps.MpsServer() as server:
        limited = gpu_split.role_env("mps", {"thread_pct": 30}, server)
        green = gpu_split.role_env("green", {"sms": 64}, server)
    assert limited == {**server.env(), "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "30"}
    assert green == server.env()
    assert gpu_split.role_env("time-slice", {}, None) == {}


def test_a_process_starts_with_its_environment_and_the_parents_is_restored(monkeypatch):
    monkeypatch.setenv("SCHOONER_SPLIT_A", "before")
    monkeypatch.delenv("SCHOONER_SPLIT_B", raising=False)
    with gpu_split.started_with({"SCHOONER_SPLIT_A": "a", "SCHOONER_SPLIT_B": "b"}):
        assert (os.environ["SCHOONER_SPLIT_A"], os.environ["SCHOONER_SPLIT_B"]) == ("a", "b")
    assert os.environ["SCHOONER_SPLIT_A"] == "before" and "SCHOONER_SPLIT_B" not in os.environ


def test_a_pool_without_an_sm_share_runs_where_it_was():
    with contextlib.ExitStack() as stack:
        assert gpu_split.enter_green(stack, {}, "cpu") == {}
        assert gpu_split.enter_green(stack, {"thread_pct": 50}, "cpu") == {}
