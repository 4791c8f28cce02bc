"""The decode step's host work done for the whole batch at once gives what it gave a row at a
time: the attention index of every row (kvpool.attention_index) and the greedy tokens of every
row (sampling.choose_rows)."""

import random

import pytest
import torch

from schooner_serve.kvpool import KVPool, PoolFull
from schooner_serve.sampling import choose, choose_rows


def index_a_row_at_a_time(pool, rows, batch, width):
    """attention_index as it was built before: a slot_index per row."""
    idx = torch.full((batch, width), pool.scratch, dtype=torch.long)
    valid = torch.zeros(batch, width, dtype=torch.bool)
    for i, (r, p1) in enumerate(rows):
        idx[i, :p1] = pool.slot_index(r, 0, p1)
        valid[i, :p1] = True
    valid[len(rows):, 0] = True
    return idx, valid


@pytest.mark.parametrize("seed", range(6))
def test_the_attention_index_of_a_batch_is_each_rows(seed):
    rnd = random.Random(seed)
    block = rnd.choice([1, 4, 16])
    pool = KVPool(layers=1, num_blocks=64, block=block, kv_heads=1, head_dim=2)
    # Requests allocated interleaved, so their block tables are not runs of consecutive blocks.
    reqs = [f"r{i}" for i in range(rnd.randrange(1, 6))]
    for k in range(3):
        for r in reqs:
            pool.allocate(r, (k + 1) * block * rnd.randrange(1, 3))
    rows = [(r, rnd.randrange(1, pool.capacity(r) + 1)) for r in reqs]
    width = max(p1 for _, p1 in rows) + rnd.randrange(0, 2 * block + 1)
    batch = len(rows) + rnd.randrange(0, 3)
    got = pool.attention_index(rows, batch, width)
    want = index_a_row_at_a_time(pool, rows, batch, width)
    assert torch.equal(got[0], want[0])
    assert torch.equal(got[1], want[1])


def test_a_row_past_its_reservation_is_refused_as_before():
    pool = KVPool(layers=1, num_blocks=8, block=4, kv_heads=1, head_dim=2)
    pool.allocate("a", 4)
    with pytest.raises(PoolFull, match="past its 4 reserved slots"):
        pool.attention_index([("a", 5)], 1, 8)


def test_greedy_rows_of_a_batch_are_each_rows_argmax_ties_included():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(9, 50, generator=g)
    logits[2, 7] = logits[2, 30] = logits[2].max() + 1  # a tie: the first index wins in both
    logits[5] = 0.0  # all equal
    temps = [0.0] * 9
    assert choose_rows(logits, temps, [0] * 9, list(range(9))) == [choose(logits[i], 0.0, 0, i) for i in range(9)]
    assert choose_rows(logits, temps, [0] * 9, list(range(9)))[2] == 7


def test_mixed_temperatures_keep_each_rows_draw():
    g = torch.Generator().manual_seed(4)
    logits = torch.randn(6, 40, generator=g)
    temps = [0.0, 0.7, 0.0, 1.3, 0.0, 0.2]
    seeds = [11, 12, 13, 14, 15, 16]
    steps = [0, 5, 2, 9, 1, 3]
    want = [choose(logits[i], temps[i], seeds[i], steps[i]) for i in range(6)]
    assert choose_rows(logits, temps, seeds, steps) == want
