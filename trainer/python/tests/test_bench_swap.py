"""bench_swap --smoke on the CPU: each mode at the largest microbatch it fits, the same tokens
both ways, and the swapping run really swapping. (Its times are not checked: that is the
benchmark's job, on the GPU machine.)"""

import json

import pytest

pytest.importorskip("torch")

from schooner_serve import bench_swap  # noqa: E402


def test_the_smoke_run_fits_twice_the_microbatch_with_swapping_and_yields_the_same_tokens(tmp_path):
    out = tmp_path / "s.json"
    bench_swap.main(["--smoke", "--out", str(out)])
    res = json.loads(out.read_text())
    assert res["device"] == "cpu"
    # 16 blocks, 2 per request, depth 4: 4 microbatches of 2 in flight without swapping; with
    # swapping the pool holds the computing and the prefetched microbatch, of 4 each.
    assert (res["sizes"]["off"], res["sizes"]["on"]) == (2, 4)
    off, on = res["runs"]
    assert (off["swap"], off["batch"], on["swap"], on["batch"]) == (False, 8, True, 16)
    assert on["same_tokens_as_first"] == "8/8"
    # the exact check: the same batch without swapping on a GPU pool that holds it
    assert on["same_tokens_as_unswapped_reference"] == "16/16"
    assert res["reference"] == {"microbatch": 4, "pool_blocks": 5 * 4 * 2}
    for r in (off, on):
        assert r["output_tokens"] == r["batch"] * res["config"]["output"]
        assert r["tokens_per_s"] > 0 and 0 < r["tbt_ms"]["p50"] <= r["tbt_ms"]["p99"]
    s = on["swap_stats"]
    assert s["swap_ins"] > 0 and s["evictions"] > 0 and s["prefetches"] > 0


def test_without_room_for_one_request_per_microbatch_only_the_swapping_mode_runs():
    class A:
        kv_gib, prompt, output, block, depth, host_gib, max_microbatch = 0.0, 24, 8, 16, 4, 0.0, 256
    a = A()
    per_block = 1024 * 16
    a.kv_gib = 5 * per_block / (1 << 30)  # 5 blocks; a request takes 2; 4 in flight take 8
    sz = bench_swap.sizes(a, per_block)
    assert (sz["pool_blocks"], sz["reserve_blocks"], sz["off"], sz["on"]) == (5, 2, 0, 1)


def test_at_a_latency_target_each_mode_counts_only_its_runs_that_meet_it():
    run = lambda swap, m, tps, p99: {"swap": swap, "microbatch": m, "tokens_per_s": tps,  # noqa: E731
                                     "tbt_ms": {"p50": p99 / 2, "p99": p99}}
    runs = [run(False, 8, 100.0, 40.0), run(False, 4, 70.0, 30.0), run(True, 16, 180.0, 90.0),
            run(True, 12, 150.0, 45.0)]
    t = bench_swap.at_target(runs, 50.0)
    assert (t["off"]["microbatch"], t["on"]["microbatch"], t["speedup"]) == (8, 12, 1.5)
    t = bench_swap.at_target(runs, 35.0)
    assert t["off"]["microbatch"] == 4 and t["on"] is None and "speedup" not in t


@pytest.mark.parametrize("flag", [[], ["--sync-steps"]])
def test_a_step_waits_for_the_whole_device_only_with_sync_steps(tmp_path, monkeypatch, flag):
    # By default a token counts once the host has it (the next step's swap-ins may still be
    # copying); --sync-steps waits for the device after every step, as the bench did before.
    seen, serve = [], bench_swap.serve

    def counting(engine, reqs, count, size, sync, each_step=False):
        n = [0]

        def counted():
            n[0] += 1
            sync()
        out = serve(engine, reqs, count, size, counted, each_step)
        seen.append((each_step, n[0], len(out["decode_steps"])))
        return out
    monkeypatch.setattr(bench_swap, "serve", counting)
    res = bench_swap.main(["--smoke", "--out", str(tmp_path / "s.json")] + flag)
    assert res["config"]["sync_steps"] == bool(flag)
    timed = [(e, n, k) for e, n, k in seen if k > 8]  # a warm-up is one microbatch of 3 steps
    assert len(timed) >= 2
    for each_step, n, steps in timed:
        assert n == (steps + 1 if each_step else 1)
    assert res["runs"][1]["same_tokens_as_unswapped_reference"] == "16/16"


def test_slow_steps_counts_the_steps_over_the_factor_of_the_median_and_their_extra_time():
    st = [0.010] * 9 + [0.016, 0.030]
    assert bench_swap.slow_steps(st, 1.5) == {"count": 2, "extra_ms": 26.0, "at": [9, 10]}
    assert bench_swap.slow_steps([0.010] * 5, 1.5) == {"count": 0, "extra_ms": 0.0, "at": []}
    assert bench_swap.slow_steps([], 1.5) == {"count": 0, "extra_ms": 0.0, "at": []}


def test_a_slow_step_counts_as_with_collection_when_an_older_generations_collection_began_inside():
    class Spans:
        spans = [(10.5, 0.002, 2), (20.0, 0.001, 1)]
        inside = __import__("schooner_serve.gcpause", fromlist=["Pauses"]).Pauses.inside
    st = [1.0] * 4 + [2.0, 2.0]
    starts = [0.0, 1.0, 2.0, 3.0, 10.0, 12.0]
    s = bench_swap.slow_steps(st, 1.5, starts, Spans())
    assert (s["at"], s["with_collection"]) == ([4, 5], 1)


def test_each_run_reports_the_collectors_pauses_and_the_engine_is_still_freed_after_a_freeze(tmp_path):
    res = bench_swap.main(["--smoke", "--out", str(tmp_path / "s.json")])
    for r in res["runs"]:
        assert r["gc"]["engine_freed"]  # unfrozen again, so the engine's cycle is collected
        assert set(r["gc"]["collections"]) == {"gen0", "gen1", "gen2"}
        assert r["gc"]["frozen_objects"] > 0
        assert "with_collection" in r["decode_step_ms"]["slow"]
    frozen = min(r["gc"]["frozen_objects"] for r in res["runs"])
    res = bench_swap.main(["--smoke", "--no-gc-freeze", "--out", str(tmp_path / "n.json")])
    # Not 0 on Python 3.12, whose collector parks immortal objects in the permanent generation.
    assert all(r["gc"]["frozen_objects"] < frozen / 2 for r in res["runs"])
