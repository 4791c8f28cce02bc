"""Preloading a replacement's KV cache before a switch, and the delta fetch at the switch
(schooner_serve/preload.py, a get's `from_step`): CPU, the tiny model, against FakeHolder (also
one that predates `from_step`) and, when SCHOONER_BIN names a built `schooner`, the Go holder over
TCP, through lent memory and through its arena. Run: /usr/bin/python3 -m pytest tests/test_preload.py"""

import time

import pytest

torch = pytest.importorskip("torch")

from schooner_serve import preload as preload_mod  # noqa: E402
from schooner_serve.client import RouterClient  # noqa: E402
from schooner_serve.config import encode  # noqa: E402
from schooner_serve.engine import StageEngine  # noqa: E402
from schooner_serve.fake_holder import FakeHolder  # noqa: E402
from schooner_serve.replicate import fetch_replica  # noqa: E402
from schooner_serve.restore_stream import ChunkPlacer  # noqa: E402

from tests.test_serve import SEED, TINY, inproc, make_holder  # noqa: E402

RIDS, PLEN, K1, K = ["m0", "m1", "m2"], 120, 5, 12  # > 100 prompt tokens: several chunks
# a position of the whole tiny model in f32: 4 layers × K and V × 2 heads × 16
TOKEN_BYTES = TINY.layers * 2 * TINY.kv_heads * (TINY.hidden // TINY.heads) * 4


def prompts():
    g = torch.Generator().manual_seed(9)
    return [torch.randint(0, 200, (PLEN,), generator=g).tolist() for _ in RIDS]


def prefill(e, seqs):
    ents = [{"request": r, "step": 0, "positions": [0, len(x)]} for r, x in zip(RIDS, seqs)]
    return e.sample(ents, e.forward("prefill", ents, [t for x in seqs for t in x]))


def decode(e, k, last):
    ents = [{"request": r, "step": k, "positions": [PLEN + k - 1, PLEN + k]} for r in RIDS]
    return e.sample(ents, e.forward("decode", ents, last))


def serve_to(old, steps):
    """The stage being replaced serves RIDS: their prompts, then decode steps 1..steps, every
    one replicated (its writer flushed). Returns the tokens of each step."""
    for r in RIDS:
        old.begin(r, PLEN + K + 8)
    toks = [prefill(old, prompts())]
    for k in range(1, steps + 1):
        toks.append(decode(old, k, toks[-1]))
    assert old.writer.flush(30)
    return toks


def holder_for(kind, path, tmp_path, monkeypatch):
    """(holder, address, honours from_step)."""
    if kind == "old":
        h = FakeHolder(honour_from_step=False)
        return h, h.addr, False
    if path == "arena":
        monkeypatch.setenv("SCHOONER_KV_ARENA", "1")
    h = make_holder(kind, **({"socket_path": str(tmp_path / "kv.sock")} if path != "tcp" else {}))
    return h, (h.unix if path != "tcp" else h.addr), True


def close_all(holder, *engines):
    """Closes the engines a test made (None where it did not get that far), then the holder."""
    for e in engines:
        if e is not None:
            e.close()
    holder.close()


@pytest.mark.parametrize("kind,path", [("fake", "tcp"), ("old", "tcp"), ("go", "tcp"), ("go", "lent"), ("go", "arena")])
def test_preload_then_the_delta_at_the_switch_gives_the_tokens_of_the_stage_that_never_moved(
        tmp_path, monkeypatch, kind, path):
    h, addr, honours = holder_for(kind, path, tmp_path, monkeypatch)
    old = new = None
    try:
        old = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=addr, deployment="mig")
        toks = serve_to(old, K1)

        # the replacement preloads while the old stage keeps decoding and replicating
        new = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=addr, deployment="mig")
        assert (new.reader is not None) == (path != "tcp")
        got = preload_mod.preload(new, 10.0)
        assert got["listed"] == got["preloaded"] == len(RIDS) and got["positions"] == len(RIDS) * (PLEN + K1)
        assert all(new.pool.lengths[r] == PLEN + K1 for r in RIDS)
        assert all(s["arena"] == (path == "arena") for s in new.restore_stats)
        for k in range(K1 + 1, K):
            toks.append(decode(old, k, toks[-1]))
        assert old.writer.flush(30)

        # the switch: the router resumes from step K (positions [0, PLEN + K - 1) wanted)
        n0 = len(new.restore_stats)
        for r in RIDS:
            assert new.restore(r, PLEN + K - 1, PLEN + K + 8) == PLEN + K - 1
        delta = new.restore_stats[n0:]
        assert len(delta) == len(RIDS)
        assert all(s["start"] == PLEN + K1 and s["from_step"] == K1 + 1 for s in delta)
        if honours:
            assert all(s["holder_from_step"] == K1 + 1 and s["bytes"] == (K - 1 - K1) * TOKEN_BYTES for s in delta)
        else:  # the whole replica came again; the positions already there were left alone
            assert all(s["holder_from_step"] == 0 and s["bytes"] == (PLEN + K - 1) * TOKEN_BYTES for s in delta)
        assert not new.preloaded
        assert decode(new, K, toks[-1]) == decode(old, K, toks[-1])
    finally:
        close_all(h, old, new)


def test_a_get_from_a_step_reads_only_the_steps_and_says_so(holder_kind_any):
    """The reader's side of from_step: chunks from the step's position, the end repeating it."""
    h = holder_kind_any
    e = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=h.addr, deployment="from")
    try:
        for r in RIDS:
            e.begin(r, PLEN + K + 8)
        toks = [prefill(e, prompts())]
        for k in range(1, 4):
            toks.append(decode(e, k, toks[-1]))
        assert e.writer.flush(30)
        whole = fetch_replica(h.addr, "from", 0, "m1")
        part = fetch_replica(h.addr, "from", 0, "m1", from_step=2)
        assert whole.from_step == 0 and part.from_step == 2 and part.acked == whole.acked == 3
        assert [t for _, t, _ in part.chunks] == [(PLEN + 1, PLEN + 3)]
        last = whole.chunks[-1][2]  # tokens [100, PLEN + 3)
        assert torch.equal(part.chunks[0][2], last[:, :, :, PLEN + 1 - 100:])
        beyond = fetch_replica(h.addr, "from", 0, "m1", from_step=9)
        assert beyond.chunks == [] and beyond.from_step == 9 and beyond.acked == 3
    finally:
        e.close()


@pytest.fixture(params=["fake", "go"])
def holder_kind_any(request):
    h = make_holder(request.param)
    yield h
    h.close()


def test_the_placer_takes_only_what_follows_a_preloaded_start():
    p = ChunkPlacer(0, 2, 30, "r", start=12)
    assert p.take((0, 2), (0, 10)) == []              # before the start: already there
    assert p.take((0, 2), (10, 20)) == [(0, 0, 2, 2, 12, 20)]  # the part after it
    assert p.have == 20
    q = ChunkPlacer(0, 2, 30, "r", start=12)
    assert q.take((0, 2), (14, 20)) == [] and q.have == 12  # a hole after the start: nothing more


def test_preload_skips_what_it_cannot_use_and_gives_back_what_no_restore_took():
    h = FakeHolder()
    old = new = None
    try:
        old = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=h.addr, deployment="skip")
        for r in RIDS:
            old.begin(r, PLEN + 8)
        prefill(old, prompts())
        # a fourth request whose prompt never completes (its last put is missing)
        k, v = old.pool.kv[0, 0, :4], old.pool.kv[0, 1, :4]
        old.writer.put_prompt("half", 0, 0, 4, k, v)
        assert old.writer.flush(30)

        new = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=h.addr, deployment="skip")
        assert preload_mod.preload(new, 0)["preloaded"] == 0, "no time: nothing"
        got = preload_mod.preload(new, 10.0)
        assert got["listed"] == 4 and got["preloaded"] == 3 and got["skipped"] == 1
        assert set(new.preloaded) == set(RIDS) and not new.pool.has("half")
        free = new.pool.num_free
        assert preload_mod.expire(new, time.monotonic()) == []
        assert sorted(preload_mod.expire(new, time.monotonic() + 1e6)) == sorted(RIDS)
        assert new.pool.num_free > free and not new.preloaded
        assert all(h.acked_step(r, deployment="skip") == 0 for r in RIDS), "the replicas stay with the holder"

        tight = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=9, holder=h.addr, deployment="skip")
        got = preload_mod.preload(tight, 10.0)
        assert got["preloaded"] == 1 and got["skipped"] == 3, "room for one replica of 120 positions"
        tight.close()
    finally:
        close_all(h, old, new)


def test_a_migration_with_preload_resumes_every_request_from_the_delta(reference_long):
    """Worker level: a stage serves; its replacement starts with --preload while it decodes on,
    then the router switches (closes the old stage, resubmits what it delivered to the new one):
    every request's tokens equal the failure-free run's and the switch fetched only steps."""
    h = FakeHolder()
    try:
        w1, a1 = inproc("--holder", h.addr, "--deployment", "mig")
        c1 = RouterClient(a1)
        for rid, p, n in LONG:
            c1.submit(rid, p, n, stop=[])
        for rid, _, _ in LONG:
            c1.wait_tokens(rid, 4)
        # The holder has the prompts (on a loaded machine the writer may lag the tokens: the
        # preload would then find nothing to fetch, and the switch restore everything).
        assert w1.engine.writer.flush(30)
        w2, a2 = inproc("--holder", h.addr, "--deployment", "mig", "--preload", "10")
        c2 = RouterClient(a2)  # connects once the replacement listens: after its preload
        preloaded = {s["request"]: s["positions"] for s in w2.engine.restore_stats}
        assert set(preloaded) == {rid for rid, _, _ in LONG}
        for rid, _, _ in LONG:
            c1.wait_tokens(rid, len(c1.tokens[rid]) + 3)  # the old stage decodes on
        c1.close()
        deadline = time.time() + 10
        while w1.requests and time.time() < deadline:  # set aside: it stops
            time.sleep(0.01)
        assert w1.engine.writer.flush(30)
        delivered = {rid: [t for _, t in sorted(c1.tokens[rid].items())] for rid, _, _ in LONG}
        n0 = len(w2.engine.restore_stats)
        for rid, p, n in LONG:
            k = len(delivered[rid])
            c2.submit(rid, p, n, stop=[], resume_from=k, generated=delivered[rid])
        out = c2.wait([rid for rid, _, _ in LONG], 60)
        for rid, p, n in LONG:
            assert delivered[rid] + out[rid] == reference_long[rid], rid
        delta = w2.engine.restore_stats[n0:]
        assert len(delta) == len(LONG)
        for s in delta:
            assert s["start"] == preloaded[s["request"]] and s["holder_from_step"] == s["from_step"] > 0
            assert s["positions"] > s["start"], "steps were decoded between the preload and the switch"
            # the steps since the preload only (the replica may hold a step past the resume point,
            # decoded but not delivered before the switch)
            assert (s["positions"] - s["start"]) * TOKEN_BYTES <= s["bytes"] <= (s["positions"] - s["start"] + 2) * TOKEN_BYTES
        c2.close()
    finally:
        h.close()


LONG = [("l0", encode("migrate me please, politely"), 300), ("l1", encode("and me too"), 260)]


@pytest.fixture(scope="module")
def reference_long():
    from schooner_serve.engine import generate
    e = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64)
    return {rid: generate(e, rid, p, n, 0.0, 0) for rid, p, n in LONG}


def test_bench_preload_times_both_switches_with_the_same_tokens(tmp_path, capsys):
    from schooner_serve import bench_preload
    out = tmp_path / "b.json"
    bench_preload.main(["--contexts", "128", "--batches", "2", "--pre", "4", "--delta", "3", "--repeats", "1",
                        "--out", str(out)])
    import json
    (row,) = json.loads(out.read_text())["rows"]
    assert row["cold_tokens_match"] and row["preload_tokens_match"] and row["preloaded"] == 2
    assert row["preload_bytes"] == 2 * 3 * TOKEN_BYTES, "the three steps since the preload, of each request"
    assert row["cold_bytes"] == 2 * (128 + 4 + 3) * TOKEN_BYTES


def test_the_delta_waits_for_the_steps_the_replaced_stage_still_sends(monkeypatch):
    """At the switch the stage replaced may still be sending its last steps (it flushes once
    stopped): the delta get waits for the step the resume needs, not only for the prompt, so no
    step is decoded again."""
    from schooner_serve import frame
    h = FakeHolder()
    old = new = None
    try:
        monkeypatch.setattr(frame, "PROCESS", "old-stage")  # the writer's hello names its process
        old = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=h.addr, deployment="late")
        monkeypatch.setattr(frame, "PROCESS", "new-stage")
        toks = serve_to(old, K1)
        new = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=h.addr, deployment="late",
                          restore_wait_s=10)
        assert preload_mod.preload(new, 10.0)["preloaded"] == len(RIDS)
        h.delay_s = 0.05  # from here each frame lands 50 ms after the one before: still sending
        for k in range(K1 + 1, K):
            toks.append(decode(old, k, toks[-1]))
        for r in RIDS:
            assert new.restore(r, PLEN + K - 1, PLEN + K + 8) == PLEN + K - 1, "every step, once it landed"
        assert h.get_waits >= 1
        h.delay_s = 0
        assert decode(new, K, toks[-1]) == decode(old, K, toks[-1])
    finally:
        close_all(h, old, new)


def test_a_holder_that_stops_answering_does_not_hold_the_preload_past_its_time():
    """A get the holder never answers times out at the preload's bound: nothing is preloaded,
    every request restores at the switch, and the preload returns in about its time."""
    h = FakeHolder()
    old = new = None
    try:
        old = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=h.addr, deployment="hang")
        serve_to(old, 0)
        h.get_delay_s = 60.0  # lists still answer; gets hang
        new = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=h.addr, deployment="hang")
        t0 = time.monotonic()
        got = preload_mod.preload(new, 0.5)
        took = time.monotonic() - t0
        assert got["listed"] == len(RIDS) and got["preloaded"] == 0
        assert took < 15.0, f"the preload took {took:.1f} s against its 0.5 s: it waited for the holder"
        assert not new.preloaded and not any(new.pool.has(r) for r in RIDS)
    finally:
        h.get_delay_s = 0.0
        close_all(h, old, new)
