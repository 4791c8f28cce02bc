"""Microbatch swapping (swap.py, hostkv.py, microbatch.py) on the CPU, where the host↔device
copies are plain copies: a swapping engine yields the tokens a non-swapping one does, and serves
a batch its GPU KV pool alone cannot hold."""

import pytest

pytest.importorskip("torch")

import torch  # noqa: E402

from schooner_serve.config import CONFIGS, encode  # noqa: E402
from schooner_serve.engine import StageEngine, generate  # noqa: E402
from schooner_serve.fake_holder import FakeHolder  # noqa: E402
from schooner_serve.hostkv import HostFull, HostKV  # noqa: E402
from schooner_serve.kvpool import PoolFull  # noqa: E402
from schooner_serve.microbatch import Microbatches  # noqa: E402
from schooner_serve.running import Running, params, prefill  # noqa: E402

TINY = CONFIGS["tiny"]
SEED = 7
BLOCK = 4
PER_POS = TINY.kv_bytes_per_token(4)  # f32, all layers


def requests(n=8, out=10):
    """n requests of different prompt lengths, greedy and seeded sampling."""
    return [{"request": f"r{i}", "prompt": encode("swap " * (1 + i % 3) + str(i)), "max_tokens": out,
             "temperature": 0.8 if i % 2 else 0.0, "seed": i, "stop": []} for i in range(n)]


def serve(engine, reqs, count, size):
    """All requests through Microbatches: admitted, prefilled a microbatch a step, decoded round
    robin to the end. Returns request -> tokens."""
    mb = Microbatches(engine, count, size)
    out = {}
    for g, group in enumerate(mb.admit(reqs)):
        if group:
            for r, t in zip(group, mb.prefill(g, group)):
                out[r["request"]] = [t]
    while len(mb):
        for r, _k, t, _done in mb.step():
            out[r].append(t)
    return out


def reserve_blocks(reqs):
    return max(-(-(len(r["prompt"]) + r["max_tokens"]) // BLOCK) for r in reqs)


def test_a_swapping_engine_yields_the_same_tokens_as_one_holding_every_cache_on_the_gpu():
    reqs = requests()
    plain = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=len(reqs) * reserve_blocks(reqs), block=BLOCK)
    want = serve(plain, reqs, count=4, size=2)
    # Room on the "GPU" for two microbatches of two: the other two live in host memory.
    swapping = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=4 * reserve_blocks(reqs), block=BLOCK,
                           swap_host=len(reqs) * 64 * PER_POS)
    got = serve(swapping, reqs, count=4, size=2)
    assert got == want
    st = swapping.swap.stats
    # Every decode round swaps the two microbatches not computing out and back in.
    assert st["evictions"] > 0 and st["swap_ins"] > 0 and st["prefetches"] > 0, st
    assert st["in_bytes"] > 0 and st["out_bytes"] > 0
    # Each request alone, without swapping or microbatches, says the same.
    ref = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, block=BLOCK)
    for r in reqs:
        assert got[r["request"]] == generate(ref, r["request"], r["prompt"], r["max_tokens"], r["temperature"],
                                             r["seed"]), r["request"]
    # Everything released: no page or host region left.
    assert swapping.pool.num_free == swapping.pool.num_blocks and not swapping.swap.host.regions


def test_with_swapping_a_batch_larger_than_the_gpu_pool_is_served_that_without_it_is_refused():
    reqs = requests(n=12)
    gpu_blocks = 3 * reserve_blocks(reqs)  # three requests' reservations: a quarter of the batch
    plain = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=gpu_blocks, block=BLOCK)
    with pytest.raises(PoolFull):
        Microbatches(plain, 4, 3).admit(reqs)
    swapping = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=gpu_blocks, block=BLOCK,
                           swap_host=len(reqs) * 64 * PER_POS)
    # Six microbatches of two: a step's two always fit; the next one beside it only while the
    # contexts are short (later the step swaps it in itself).
    got = serve(swapping, reqs, count=6, size=2)
    assert len(got) == len(reqs) and all(len(t) == r["max_tokens"] for t, r in zip(got.values(), reqs))
    ref = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, block=BLOCK)
    for r in reqs:
        assert got[r["request"]] == generate(ref, r["request"], r["prompt"], r["max_tokens"], r["temperature"],
                                             r["seed"]), r["request"]
    assert swapping.swap.stats["evictions"] > 0


def test_admission_stops_at_the_host_pools_size_and_a_step_larger_than_the_gpu_pool_runs_in_parts():
    reqs = requests(n=4)
    e = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=reserve_blocks(reqs), block=BLOCK,
                    swap_host=2 * 40 * PER_POS)
    with pytest.raises(HostFull):  # two 40-position regions of host memory, for four requests
        Microbatches(e, 2, 2).admit(reqs)
    # A pool with room for one request: a microbatch of four runs as four forwards of one (a
    # later stage's pool may be smaller than the first stage's, which chose the step).
    e2 = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=reserve_blocks(reqs), block=BLOCK,
                     swap_host=8 * 40 * PER_POS)
    got = serve(e2, reqs, count=1, size=4)
    ref = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, block=BLOCK)
    for r in reqs:
        assert got[r["request"]] == generate(ref, r["request"], r["prompt"], r["max_tokens"], r["temperature"],
                                             r["seed"]), r["request"]
    # One request larger than the GPU pool cannot run at all.
    e2.begin("long", 10 * BLOCK * reserve_blocks(reqs), {"temperature": 0.0, "seed": 0, "max_tokens": 1,
                                                         "stop": [], "reserve": 10 * BLOCK * reserve_blocks(reqs)})
    n = BLOCK * reserve_blocks(reqs) + 1
    with pytest.raises(PoolFull, match="the GPU pool has"):
        e2.forward("prefill", [{"request": "long", "step": 0, "positions": [0, n]}], [1] * n)


def test_a_swapping_stage_restores_replicas_swaps_them_out_and_back_and_decodes_on():
    """A replacement that swaps: two requests restored from the holder onto a GPU pool with room
    for one (the second's restore evicts the first, its whole cache copied to host memory), then
    decoded in turns, each step swapping the other out: the tokens of a run that never failed."""
    reqs = requests(n=2, out=12)
    h = FakeHolder()
    old = new = None
    try:
        old = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, block=BLOCK, holder=h.addr, deployment="sw")
        run = Running(old)
        out = {}
        for r, t in zip(reqs, prefill(old, reqs)):
            run.add(r["request"], len(r["prompt"]), [t])
            out[r["request"]] = [t]
        for _ in range(4):
            for rid, _k, t, _d in run.step():
                out[rid].append(t)
        assert old.writer.flush(30) and all(h.acked_step(r["request"], deployment="sw") == 4 for r in reqs)
        old.close()

        new = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=reserve_blocks(reqs), block=BLOCK, holder=h.addr,
                          deployment="sw", swap_host=4 * 64 * PER_POS)
        for r in reqs:
            p, need = len(r["prompt"]), len(r["prompt"]) + len(out[r["request"]]) - 1
            assert new.restore(r["request"], need, p + r["max_tokens"], params(r)) == need
        assert new.swap.stats["evictions"] == 1 and new.swap.stats["out_bytes"] > 0
        turns = Microbatches(new, 2, 1)
        for g, r in enumerate(reqs):  # each its own microbatch, as restored
            turns.groups[g].append(r["request"])
            turns.reqs[r["request"]] = (len(r["prompt"]), out[r["request"]])
        while len(turns):
            turns.step()
        ref = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, block=BLOCK)
        for r in reqs:
            assert out[r["request"]] == generate(ref, r["request"], r["prompt"], r["max_tokens"], r["temperature"],
                                                 r["seed"]), r["request"]
        assert new.swap.stats["swap_ins"] >= 7, new.swap.stats
    finally:
        for e in (old, new):
            if e is not None:
                e.close()
        h.close()


def test_the_host_pool_allocates_first_fit_and_merges_freed_extents():
    h = HostKV(1, 10, 1, 2, torch.float32, pin=False)
    h.allocate("a", 3)
    h.allocate("b", 4)
    h.allocate("c", 3)
    assert h.num_free == 0
    with pytest.raises(HostFull):
        h.allocate("d", 1)
    h.view("b", 0, 4).fill_(2.0)
    h.release("a")
    h.release("c")
    assert h.free == [(0, 3), (7, 3)]
    with pytest.raises(HostFull):
        h.allocate("d", 4)  # six free, but no four together
    h.release("b")
    assert h.free == [(0, 10)]
    h.allocate("e", 2)
    h.view("e", 0, 2).fill_(5.0)
    h.allocate("e", 6)  # grows: moved, contents kept
    assert h.view("e", 0, 2).eq(5.0).all() and h.regions["e"][1] == 6
    with pytest.raises(IndexError):
        h.view("e", 0, 7)


def test_with_room_for_three_of_four_microbatches_two_are_swapped_in_per_round_not_four():
    # Eight requests of 8 prompt positions and 6 tokens: every context fits one block of 16, so
    # the pool's 6 blocks hold exactly three microbatches of two.
    reqs = [{"request": f"r{i}", "prompt": encode(f"swap {i:02d}"), "max_tokens": 6, "temperature": 0.0,
             "seed": 0, "stop": []} for i in range(8)]
    e = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=6, block=16, swap_host=8 * 16 * PER_POS)
    mb = Microbatches(e, 4, 2)
    for g, group in enumerate(mb.admit(reqs)):
        mb.prefill(g, group)
    before = e.swap.stats["swap_ins"]
    rounds = 4
    for _ in range(4 * rounds):
        mb.step()
    # Most-recently-used eviction: two microbatches stay resident for good and the other two
    # take turns in the third slot: two microbatches (four requests) swapped in per round, where
    # least-recently-used eviction would swap in all four (eight requests) every round.
    assert (e.swap.stats["swap_ins"] - before) == rounds * 2 * 2, e.swap.stats


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the side stream, pinned host memory and events need a GPU")
def test_on_a_gpu_the_prefetch_on_a_side_stream_yields_the_same_tokens():
    # bf16 with decode graphs, as served: only where the caches are (and when they are copied)
    # differs between the two engines, so the tokens must be bit for bit the same.
    reqs = requests(n=16, out=24)
    plain = StageEngine(TINY, SEED, 0, TINY.layers, device="cuda", kv_blocks=16 * reserve_blocks(reqs), block=BLOCK)
    want = serve(plain, reqs, count=4, size=4)
    swapping = StageEngine(TINY, SEED, 0, TINY.layers, device="cuda", kv_blocks=8 * reserve_blocks(reqs),
                           block=BLOCK, swap_host=len(reqs) * 64 * PER_POS)
    assert swapping.swap.host.data.is_pinned()
    got = serve(swapping, reqs, count=4, size=4)
    assert got == want
    st = swapping.swap.stats
    assert st["prefetches"] > 0 and st["evictions"] > 0, st
