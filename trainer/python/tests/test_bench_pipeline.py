"""bench_pipeline end to end on CPU with the tiny model: two stage processes, a standby per
failover, the FakeHolder; every resumed request must reproduce the failure-free tokens. (Its
times are not checked: that is the benchmark's job, on the GPU machine.)"""

import json

import pytest

pytest.importorskip("torch")

from schooner_serve import bench_pipeline  # noqa: E402


def test_the_pipeline_bench_resumes_every_request_with_the_reference_tokens(tmp_path, monkeypatch):
    monkeypatch.setenv("SCHOONER_SERVE_THREADS", "1")
    out = tmp_path / "p.json"
    bench_pipeline.main(["--model", "tiny", "--contexts", "48", "--batches", "2", "--generated", "6", "--tail", "4",
                         "--device", "cpu", "--timeout", "120", "--logs", str(tmp_path / "logs"), "--out", str(out)])
    res = json.loads(out.read_text())
    assert res["stages"] == 2 and res["holder"] == "fake"
    (row,) = res["rows"]
    assert (row["context"], row["batch"]) == (48, 2)
    for mode in ("restore", "reprefill"):
        assert row[f"{mode}_match"] == [True, True], mode
        assert min(row[f"{mode}_delivered"]) >= 6, "the stage was lost after --generated tokens"
        assert row[f"{mode}_ms"] > 0
