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


def test_latencies_are_counted_from_each_requests_arrival_and_tokens():
    sched = [{"request": "a", "arrival": 0.0}, {"request": "b", "arrival": 1.0}]
    reqs = {"a": {"times": [10.1, 10.2, 10.4], "tokens": [1, 2, 3]}, "b": {"times": [11.3, 11.4], "tokens": [4, 5]}}
    s = bench_disagg.summarize(reqs, sched, t0=10.0)
    assert s["output_tokens"] == 5 and s["span_s"] == 1.4
    assert s["ttft_ms"] == {"p50": 100.0, "p99": 300.0}  # 100 ms for a, 300 ms for b
    assert s["tbt_ms"]["p50"] == 100.0 and s["tbt_ms"]["p99"] == 200.0  # gaps 100, 200, 100 ms
    assert s["tpot_ms"]["p99"] == 150.0  # a: 300 ms over 2 gaps
    assert bench_disagg.pct([], 0.5) == 0.0 and bench_disagg.pct([3, 1, 2], 0.5) == 2


def test_a_prefill_takes_what_fits_its_tokens_the_batch_and_the_kv_pool():
    import collections
    from schooner_serve.disagg_loops import take
    from schooner_serve.kvpool import KVPool
    pool = KVPool(1, 10, 4, 1, 2)  # 10 blocks of 4 tokens
    waiting = collections.deque({"request": f"r{i}", "prompt": [0] * 8} for i in range(5))
    assert [r["request"] for r in take(waiting, pool, 0, 8, 100, lambda r: 12)] == ["r0", "r1", "r2"]  # 3 blocks each
    assert [r["request"] for r in take(waiting, pool, 0, 8, 10, lambda r: 4)] == ["r3"]  # tokens: one at least
    assert take(waiting, pool, 8, 8, 100, lambda r: 4) == [] and len(waiting) == 1  # the batch is full


@pytest.mark.parametrize("split", ["mps", "green"])
def test_split_pools_on_one_gpu_serve_every_request_with_the_colocated_tokens(tmp_path, split):
    import torch
    from schooner_serve import gpu_split
    why = gpu_split.unavailable(split, "cuda" if torch.cuda.is_available() else "cpu")
    if why:
        pytest.skip(why)
    out = tmp_path / "d.json"
    res = bench_disagg.main(["--smoke", "--device", "cuda", "--dtype", "float32", "--split", split,
                             "--prompt-share", "0.25", "--out", str(out)])
    n = res["config"]["requests"]
    assert res["same_tokens"] == f"{n}/{n}" and res["split"]["kind"] == split
    assert res["disaggregated"]["handoff"]["restored"] == n
    prompt, token = res["engines"]["prompt"], res["engines"]["token"]
    if split == "mps":
        assert (prompt["mps_thread_pct"], token["mps_thread_pct"]) == ("25", "75")
    else:
        assert prompt["green_context_sms"] + token["green_context_sms"] == torch.cuda.get_device_properties(0).multi_processor_count
