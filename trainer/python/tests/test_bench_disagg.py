"""bench_disagg --smoke end to end on CPU: a colocated engine process, then a prompt and a token
engine process, on the FakeHolder and (with SCHOONER_BIN) the Go holder; every request's tokens
must be the same both ways and every prompt restored, not recomputed. (Its times are not
checked: that is the benchmark's job, on the GPU machine.)"""

import json

import pytest

pytest.importorskip("torch")

from schooner_serve import bench_disagg  # noqa: E402

from .test_serve import holder_kind, make_holder  # noqa: E402,F401


def test_the_smoke_run_serves_every_request_both_ways_with_the_same_tokens(tmp_path, holder_kind):
    h = make_holder(holder_kind) if holder_kind == "go" else None
    try:
        out = tmp_path / "d.json"
        bench_disagg.main(["--smoke", "--out", str(out), *(["--holder", h.addr] if h else [])])
        res = json.loads(out.read_text())
    finally:
        if h is not None:
            h.close()
    assert res["device"] == "cpu" and res["holder"] == ("fake" if h is None else h.addr)
    n = res["config"]["requests"]
    assert res["same_tokens"] == f"{n}/{n}"
    for mode in ("colocated", "disaggregated"):
        r = res[mode]
        assert r["requests"] == n and r["output_tokens"] == n * res["config"]["output"], mode
        assert r["tokens_per_s"] > 0 and 0 < r["ttft_ms"]["p50"] <= r["ttft_ms"]["p99"], mode
        assert 0 < r["tbt_ms"]["p50"] <= r["tbt_ms"]["p99"], mode
    hand = res["disaggregated"]["handoff"]
    assert (hand["restored"], hand["recomputed"]) == (n, 0)
    assert hand["prompt_writer"]["dead"] is None and hand["token_writer"]["refused"] == 0
