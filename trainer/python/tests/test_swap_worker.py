"""The worker with --swap-host-gib: a two-stage pipeline whose stages' GPU pools hold one
request's reservation each serves three at once, --max-batch 1 a step (microbatches taking
turns, the next one prefetched on every stage), with the reference's tokens, replicating."""

import time

import pytest

pytest.importorskip("torch")

from schooner_serve.client import RouterClient  # noqa: E402
from schooner_serve.fake_holder import FakeHolder  # noqa: E402

from .test_serve import REQS, inproc, reference, submit_all  # noqa: E402,F401


def test_a_swapping_pipeline_runs_more_requests_than_its_gpu_pools_hold_with_the_same_tokens(reference):
    holder = FakeHolder()
    try:
        # 4 blocks of 16 positions: the longest of REQS (26 + 24), where the three reserve 9.
        common = ["--depth", "2", "--kv-blocks", "4", "--max-batch", "1", "--swap-host-gib", "0.001",
                  "--holder", holder.addr]
        w1, a1 = inproc("--stage", "1", "--layers", "2:4", *common)
        w0, a0 = inproc("--stage", "0", "--layers", "0:2", "--next", a1, *common)
        c = RouterClient(a0, a1)
        submit_all(c, route=[a0, a1])
        seen, acked, deadline = [], set(), time.time() + 30
        while len(c.done) < len(REQS) and time.time() < deadline:
            seen.append(c.ping()["load"])
            acked |= {(rid, st) for rid, *_ in REQS for st in (0, 1) if holder.acked_step(rid, stage=st) > 0}
        assert any(x["running"] == len(REQS) for x in seen), "all three decode together, two swapped out"
        assert c.wait([r[0] for r in REQS], 60) == reference
        for w in (w0, w1):
            st = w.engine.swap.stats
            assert st["evictions"] > 0 and st["swap_ins"] > 0 and st["prefetches"] > 0, st
        # Replication goes on as without swapping: decode steps of swapped requests were acked
        # on both stages.
        assert {st for _, st in acked} == {0, 1}, acked
        c.close()
    finally:
        holder.close()


def test_a_pipeline_with_a_step_in_flight_per_stage_gives_the_same_tokens_with_and_without_swapping(reference):
    """--inflight 2 on two stages: the first stage keeps two microbatches (of --max-batch 1) in
    flight, one at each stage, as the pipeline's depth asks; with swapping the stages hold three
    requests on pools with room for about one."""
    for swap in ([], ["--kv-blocks", "4", "--swap-host-gib", "0.001"]):
        common = ["--depth", "2", "--max-batch", "1", "--inflight", "2", *swap]
        w1, a1 = inproc("--stage", "1", "--layers", "2:4", *common)
        w0, a0 = inproc("--stage", "0", "--layers", "0:2", "--next", a1, *common)
        c = RouterClient(a0, a1)
        submit_all(c, route=[a0, a1])
        most = 0
        deadline = time.time() + 30
        while len(c.done) < len(REQS) and time.time() < deadline:
            most = max(most, len(w0.steps))
            time.sleep(0.001)
        assert c.wait([r[0] for r in REQS], 60) == reference, swap
        assert most == 2, f"two steps in flight at once ({swap})"
        if swap:
            assert w1.engine.swap.stats["evictions"] > 0
        c.close()
