"""The worker with --swap-host-gib: a two-stage pipeline whose stages' GPU pools hold one
request's reservation each serves three at once, --max-batch 1 a step (microbatches taking
turns, the next one prefetched on every stage), with the reference's tokens, replicating."""

import time

import pytest

pytest.importorskip("torch")

from schooner_serve.client import RouterClient  # noqa: E402
from schooner_serve.fake_holder import FakeHolder  # noqa: E402

from .test_serve import REQS, free_port, inproc, reference, spawn, submit_all  # noqa: E402,F401


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


def test_a_last_stage_lost_with_two_steps_in_flight_is_replaced_and_every_request_resumes(reference):
    """Two steps in flight when the last stage dies (after 20 tokens, its replica flushed): the
    first stage gives both up and sets every request aside; resubmitted along the route to a
    replacement that restores from the holder (swapping, as the first stage), each request ends
    with the failure-free tokens."""
    holder = FakeHolder()
    p1 = free_port()
    common = ["--depth", "2", "--max-batch", "1", "--inflight", "2", "--holder", holder.addr]
    swap = ["--kv-blocks", "4", "--swap-host-gib", "0.001"]
    victim = spawn("--stage", "1", "--layers", "2:4", "--listen", f"127.0.0.1:{p1}", *common,
                   "--exit-after-tokens", "20", "--exit-flush")
    try:
        w0, a0 = inproc("--stage", "0", "--layers", "0:2", "--replicate", "off", *common, *swap)
        a1 = f"127.0.0.1:{p1}"
        deadline = time.time() + 60
        while True:  # the victim imports torch first
            try:
                c = RouterClient(a0, a1)
                break
            except OSError:
                assert time.time() < deadline, "the last stage never listened"
                time.sleep(0.05)
        submit_all(c, route=[a0, a1])
        assert victim.wait(60) == 3
        delivered = {r: [t for _, t in sorted(c.tokens.get(r, {}).items())] for r, *_ in REQS}
        c.close()
        assert sum(map(len, delivered.values())) == 20
        resume = {r: min(len(delivered[r]), holder.acked_step(r, stage=1) + 1) for r in delivered}
        assert any(resume[r] > 1 for r in resume)

        w1, a1b = inproc("--stage", "1", "--layers", "2:4", *common, *swap)
        c2 = RouterClient(a0, a1b)
        want = []
        for rid, p, n, t, sd in REQS:
            k = resume[rid]
            if k < n:
                want.append(rid)
                c2.submit(rid, p, n, temperature=t, seed=sd, stop=[], resume_from=k, generated=delivered[rid][:k],
                          route=[a0, a1b])
        out = c2.wait(want, 60)
        for rid in want:
            assert delivered[rid][:resume[rid]] + out[rid] == reference[rid], rid
        assert w1.engine.restore_stats, "the replacement restored from the holder"
        c2.close()
    finally:
        if victim.poll() is None:
            victim.kill()
        victim.wait()
        holder.close()
