"""The streamed restore's placement (schooner_serve/restore_stream.py): which part of each chunk a
stage takes, and that chunks placed as they land fill the pages exactly as the whole-replica
path does, on a CPU and (skipped without one) through the device slots of a GPU.
Run: /usr/bin/python3 -m pytest tests/test_restore_stream.py"""

import pytest

torch = pytest.importorskip("torch")

from schooner_serve.kvpool import KVPool  # noqa: E402
from schooner_serve.restore_stream import (ChunkPlacer, PlacementError, RestoreSlots,  # noqa: E402
                                           StreamedScatter, pool_order, step_runs)

KVH, HD, BLOCK = 2, 8, 4


def replica(layers, tokens, cuts, seed=1, dtype=torch.float32, pin=False):
    """Chunks [(layers, tokens, [L, 2, kvh, T, hd])] cutting tokens [0, tokens) at `cuts`."""
    g = torch.Generator().manual_seed(seed)
    full = torch.randn(layers[1] - layers[0], 2, KVH, tokens, HD, generator=g).to(dtype)
    out, edges = [], [0, *cuts, tokens]
    for t0, t1 in zip(edges, edges[1:]):
        c = full[:, :, :, t0:t1].contiguous()
        out.append((layers, (t0, t1), c.pin_memory() if pin else c))
    return full, out


def pool_with(request, tokens, layers=2, device="cpu", dtype=torch.float32):
    p = KVPool(layers, tokens // BLOCK + 8, BLOCK, KVH, HD, dtype, device)
    p.allocate(request, tokens + 1)
    return p


def pages(p, request, n):
    return p.kv[:, :, p.slot_index(request, 0, n).to(p.kv.device)].cpu()


def test_placer_takes_parts_up_to_need_and_stops_at_a_hole():
    pl = ChunkPlacer(0, 2, need=10, request="r")
    assert pl.take((0, 2), (0, 4)) == [(0, 0, 2, 0, 0, 4)]
    assert pl.take((0, 2), (2, 6)) == [(0, 0, 2, 2, 4, 6)]  # overlapping: only what is new
    assert pl.take((0, 2), (6, 12)) == [(0, 0, 2, 0, 6, 10)]  # clipped at need
    assert pl.take((0, 2), (12, 14)) == [] and pl.have == 10
    gap = ChunkPlacer(0, 2, need=10)
    gap.take((0, 2), (0, 3))
    assert gap.take((0, 2), (4, 8)) == [] and all(gap.stopped)
    assert gap.take((0, 2), (3, 4)) == [] and gap.have == 3  # nothing after a hole
    # a replica of more layers than the stage's: the offset of the stage's first layer
    assert ChunkPlacer(2, 4, need=5).take((0, 4), (0, 5)) == [(2, 0, 2, 0, 0, 5)]
    short = ChunkPlacer(0, 4, need=5)
    short.take((1, 4), (0, 5))
    with pytest.raises(PlacementError, match="layers 1:4"):
        short.check()


def test_placer_takes_one_layer_pieces_then_all_layer_steps():
    """The order of an answer from a holder's arena: the prompt's pieces layer by layer (a layer
    in two pieces here), then the decode steps of every layer."""
    pl = ChunkPlacer(4, 7, need=12)
    got = []
    for layer in (4, 5, 6):
        got += pl.take((layer, layer + 1), (0, 6))
        got += pl.take((layer, layer + 1), (6, 10))
    assert got == [(0, s, 1, 0, 0, 6) for s in range(1)] + [(0, 0, 1, 0, 6, 10)] + \
        [(0, 1, 1, 0, 0, 6), (0, 1, 1, 0, 6, 10), (0, 2, 1, 0, 0, 6), (0, 2, 1, 0, 6, 10)]
    assert pl.have == 10
    # the steps: one run of all three layers
    assert pl.take((4, 7), (10, 12)) == [(0, 0, 3, 0, 10, 12)] and pl.have == 12
    pl.check()
    # a layer left with a hole holds the rest back
    holed = ChunkPlacer(0, 2, need=8)
    holed.take((0, 1), (0, 8))
    holed.take((1, 2), (0, 3))
    holed.take((1, 2), (5, 8))
    assert holed.take((0, 2), (8, 9)) == [] and holed.have == 3


def test_streamed_on_cpu_fills_the_pages_the_replica_holds():
    full, chunks = replica((0, 2), 23, [5, 6, 17])
    p = pool_with("a", 23)
    s = StreamedScatter(p, "a", 0, 2, 20, RestoreSlots("cpu"))
    s.landed(chunks[:2])
    s.landed(chunks[2:])
    assert s.finish() == 20
    assert torch.equal(pages(p, "a", 20), pool_order(full[:, :, :, :20]))
    # past need nothing was written
    assert not pages(p, "a", 23)[:, :, 20:].any()


def test_decode_steps_are_grouped_and_nothing_else_is():
    _, chunks = replica((0, 2), 12, [6, 7, 8, 9, 11])  # a prompt, three steps, two tokens, a step
    groups = step_runs(chunks)
    assert [[c[1] for c in g] for g in groups] == [[(0, 6)], [(6, 7), (7, 8), (8, 9)], [(9, 11)], [(11, 12)]]
    step = chunks[1][2].numel() * chunks[1][2].element_size()
    assert [len(g) for g in step_runs(chunks, slot_bytes=2 * step)] == [1, 2, 1, 1, 1]  # a slot holds two
    # a hole between steps, or other layers, starts a new group
    holed = [c for c in chunks if c[1] != (7, 8)]
    assert [len(g) for g in step_runs(holed)] == [1, 1, 1, 1, 1]
    other = chunks[:2] + [((0, 1), (7, 8), chunks[2][2][:1].contiguous())]
    assert [len(g) for g in step_runs(other)] == [1, 1, 1]


def test_streamed_places_a_run_of_decode_steps_as_one_piece():
    full, chunks = replica((0, 2), 40, [16] + list(range(17, 40)))  # a prompt, then 24 steps
    p = pool_with("a", 40)
    s = StreamedScatter(p, "a", 0, 2, 38, RestoreSlots("cpu"))
    s.landed(chunks[:5])  # the prompt and 4 steps
    s.landed(chunks[5:])  # 20 steps, the last two past need
    assert s.finish() == 38
    assert torch.equal(pages(p, "a", 38), pool_order(full[:, :, :, :38]))
    assert not pages(p, "a", 40)[:, :, 38:].any()
    assert s.pieces == 2, "the prompt, then the steps of both landings as one piece"
    # as the holder streams: every chunk lands on its own
    one = pool_with("c", 40)
    s = StreamedScatter(one, "c", 0, 2, 38, RestoreSlots("cpu"))
    for ch in chunks:
        s.landed([ch])
    assert s.pieces == 1, "the steps wait for the ones after them"
    assert s.finish() == 38
    assert s.pieces == 2
    assert torch.equal(pages(one, "c", 38), pool_order(full[:, :, :, :38]))
    # a lost step: the steps after it are not placed
    lost = [c for c in chunks if c[1] != (20, 21)]
    q = pool_with("b", 40)
    h = StreamedScatter(q, "b", 0, 2, 38, RestoreSlots("cpu"))
    h.landed(lost)
    assert h.finish() == 20
    assert torch.equal(pages(q, "b", 20), pool_order(full[:, :, :, :20]))
    assert not pages(q, "b", 40)[:, :, 20:].any()


def test_streamed_notes_a_replica_that_does_not_fit_and_reads_on():
    _, chunks = replica((1, 3), 8, [4])
    s = StreamedScatter(pool_with("a", 8), "a", 0, 2, 8, RestoreSlots("cpu"))
    s.landed(chunks[:1])
    s.landed(chunks[1:])  # the rest of the answer is taken, and placed nowhere
    with pytest.raises(PlacementError, match="layers 1:3"):
        s.finish()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the device slots need CUDA")
def test_streamed_through_small_device_slots_matches_the_cpu():
    layers, n = 6, 300
    full, chunks = replica((0, layers), n, [64, 65, 200], dtype=torch.bfloat16, pin=True)
    ref = pool_with("a", n, layers, dtype=torch.bfloat16)
    c = StreamedScatter(ref, "a", 0, layers, n, RestoreSlots("cpu"))
    c.landed(chunks)
    assert c.finish() == n
    per_layer = chunks[0][2][0].numel() * 2
    # two slots of two layers of the first chunk: layer groups, slot reuse, and growth for the
    # larger chunks after it (said on stdout)
    slots = RestoreSlots("cuda", slots=2, slot_bytes=2 * per_layer)
    for request in ("a", "b"):  # a second restore reuses the slots after the first's scatters
        got = pool_with(request, n, layers, device="cuda", dtype=torch.bfloat16)
        s = StreamedScatter(got, request, 0, layers, n, slots)
        for ch in chunks:
            s.landed([ch])
        assert s.finish() == n
        torch.cuda.current_stream().synchronize()
        assert torch.equal(pages(got, request, n), pages(ref, "a", n))
    assert slots.slot_bytes >= chunks[2][2][0].numel() * 2


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the device slots need CUDA")
def test_decode_steps_through_a_device_slot_match_the_cpu():
    layers, n = 4, 48
    full, chunks = replica((0, layers), n, list(range(16, n)), dtype=torch.bfloat16, pin=True)  # 32 steps
    ref = pool_with("a", n, layers, dtype=torch.bfloat16)
    c = StreamedScatter(ref, "a", 0, layers, n - 2, RestoreSlots("cpu"))
    c.landed(chunks)
    assert c.finish() == n - 2
    step = chunks[1][2].numel() * 2
    # slots of 8 steps (a layer of the prompt fits one): the 32 steps go as four groups, cycling
    # through the two slots, the last clipped at need
    assert chunks[0][2][0].numel() * 2 <= 8 * step
    slots = RestoreSlots("cuda", slots=2, slot_bytes=8 * step)
    got = pool_with("a", n, layers, device="cuda", dtype=torch.bfloat16)
    s = StreamedScatter(got, "a", 0, layers, n - 2, slots)
    for ch in chunks:  # as the holder streams: one chunk a landing
        s.landed([ch])
    assert s.finish() == n - 2
    torch.cuda.current_stream().synchronize()
    assert torch.equal(pages(got, "a", n - 2), pages(ref, "a", n - 2))
    assert s.pieces == 1 + 4
