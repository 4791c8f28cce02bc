"""The streamed restore's placement (schooner_serve/restore_stream.py): which part of each chunk a
stage takes, which of the holder's one-layer prompt pieces are placed together, and that chunks
placed as they land fill the pages exactly as the whole-replica path does, on a CPU and
(skipped without one) through the device slots of a GPU.
Run: /usr/bin/python3 -m pytest tests/test_restore_stream.py"""

import pytest

torch = pytest.importorskip("torch")

from schooner_serve.kvpool import KVPool  # noqa: E402
from schooner_serve.restore_stream import (ChunkPlacer, PlacementError, RestoreSlots,  # noqa: E402
                                           StreamedScatter, layer_groups, pool_order)

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


def arena_replica(layers, prompt, tokens, seed=2, dtype=torch.float32, pin=False):
    """A replica as a streamed get from the holder's arena hands it over: the prompt's tokens
    [0, prompt) one piece per layer, then the decode steps [prompt, tokens) of every layer as one
    chunk (kvcache/shm.go getArena)."""
    g = torch.Generator().manual_seed(seed)
    full = torch.randn(layers, 2, KVH, tokens, HD, generator=g).to(dtype)

    def chunk(part):
        part = part.contiguous()
        return part.pin_memory() if pin else part

    pieces = [((l, l + 1), (0, prompt), chunk(full[l:l + 1, :, :, :prompt])) for l in range(layers)]
    return full, pieces, [((0, layers), (prompt, tokens), chunk(full[:, :, :, prompt:]))]


def test_the_prompts_layers_are_placed_as_one_piece():
    full, pieces, steps = arena_replica(4, 16, 40)
    p = pool_with("a", 40, layers=4)
    s = StreamedScatter(p, "a", 0, 4, 38, RestoreSlots("cpu"))
    s.landed(pieces)  # as replicate.LentReader.fetch hands them: the arena's pieces in one call
    s.landed(steps)
    assert s.finish() == 38
    assert torch.equal(pages(p, "a", 38), pool_order(full[:, :, :, :38]))
    assert not pages(p, "a", 40)[:, :, 38:].any()
    assert s.pieces == 2, "the prompt's four layers as one piece, then the steps"
    # a stage of the middle layers takes its part of the group
    mid = pool_with("b", 40, layers=2)
    s = StreamedScatter(mid, "b", 1, 3, 40, RestoreSlots("cpu"))
    s.landed(pieces)
    s.landed(steps)
    assert s.finish() == 40 and s.pieces == 2
    assert torch.equal(pages(mid, "b", 40), pool_order(full[1:3]))
    # the prompt of one layer lost: the layers either side are placed apart, and nothing of
    # the lost layer (its steps follow a hole), so no position is restored in every layer
    lost = pool_with("c", 40, layers=4)
    s = StreamedScatter(lost, "c", 0, 4, 40, RestoreSlots("cpu"))
    s.landed(pieces[:2] + pieces[3:])
    s.landed(steps)
    assert s.finish() == 0 and s.pieces == 2 + 2
    got = pages(lost, "c", 40)
    assert torch.equal(got[[0, 1, 3]], pool_order(full[[0, 1, 3]]))
    assert not got[2].any()


def test_layer_groups_fill_at_most_a_slot():
    _, pieces, steps = arena_replica(5, 16, 40)
    layer = pieces[0][2].numel() * pieces[0][2].element_size()
    assert [len(g) for g in layer_groups(pieces + steps)] == [5, 1]
    assert [len(g) for g in layer_groups(pieces + steps, slot_bytes=2 * layer)] == [2, 2, 1, 1]
    assert [len(g) for g in layer_groups(pieces + steps, slot_bytes=2 * layer - 1)] == [1] * 6
    groups = layer_groups(pieces, slot_bytes=3 * layer)
    assert [[c[0] for c in g] for g in groups] == [[(0, 1), (1, 2), (2, 3)], [(3, 4), (4, 5)]]


def test_layer_groups_split_at_a_gap_other_tokens_or_layout():
    _, pieces, steps = arena_replica(4, 16, 40)
    gap = pieces[:1] + pieces[2:]
    assert [[c[0] for c in g] for g in layer_groups(gap)] == [[(0, 1)], [(2, 3), (3, 4)]]
    shorter = pieces[:2] + [((2, 3), (0, 8), pieces[2][2][:, :, :, :8].contiguous())] + pieces[3:]
    assert [len(g) for g in layer_groups(shorter)] == [2, 1, 1]
    # a layer of the prompt in two pieces: each piece on its own
    split = [((l, l + 1), t, c[:, :, :, t[0]:t[1]].contiguous())
             for (l, _), _, c in pieces for t in ((0, 8), (8, 16))]
    assert [len(g) for g in layer_groups(split)] == [1] * 8
    # another dtype, or a chunk that is not contiguous
    other = pieces[:2] + [(pieces[2][0], pieces[2][1], pieces[2][2].to(torch.float16))] + pieces[3:]
    assert [len(g) for g in layer_groups(other)] == [2, 1, 1]
    strided = pieces[:1] + [(pieces[1][0], pieces[1][1], pieces[1][2].transpose(2, 3).contiguous().transpose(2, 3))]
    assert [len(g) for g in layer_groups(strided)] == [1, 1]
    # the steps: chunks of the same layers over the next tokens stay apart
    cut = [((0, 4), (t0, t1), steps[0][2][:, :, :, t0 - 16:t1 - 16].contiguous()) for t0, t1 in ((16, 30), (30, 40))]
    assert [len(g) for g in layer_groups(pieces + cut)] == [4, 1, 1]


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
def test_the_prompts_layers_through_small_device_slots_match_the_cpu():
    layers, prompt, n = 6, 64, 96
    full, pieces, steps = arena_replica(layers, prompt, n, dtype=torch.bfloat16, pin=True)
    ref = pool_with("a", n, layers, dtype=torch.bfloat16)
    c = StreamedScatter(ref, "a", 0, layers, n - 2, RestoreSlots("cpu"))
    c.landed(pieces)
    c.landed(steps)
    assert c.finish() == n - 2 and c.pieces == 2
    # two slots of two prompt layers: the prompt goes as three groups, cycling through the
    # slots, and the steps (6 layers × 32 tokens, 4 layers a slot) as two scatters
    slots = RestoreSlots("cuda", slots=2, slot_bytes=2 * pieces[0][2].numel() * 2)
    for request in ("a", "b"):  # a second restore reuses the slots after the first's scatters
        got = pool_with(request, n, layers, device="cuda", dtype=torch.bfloat16)
        s = StreamedScatter(got, request, 0, layers, n - 2, slots)
        s.landed(pieces)
        s.landed(steps)
        assert s.finish() == n - 2
        torch.cuda.current_stream().synchronize()
        assert torch.equal(pages(got, request, n - 2), pages(ref, "a", n - 2))
        assert not pages(got, request, n)[:, :, n - 2:].any()
        assert (s.pieces, s.slot_copies) == (3 + 2, 3 + 2)
