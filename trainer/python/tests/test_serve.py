"""schooner_serve on CPU with the tiny model: framing, the paged pool, one stage, two stages as
two processes, failover with restore from a replica (FakeHolder — a Python test double of the Go
holder) and restore against re-prefill. Run: /usr/bin/python3 -m pytest tests/test_serve.py"""

import io
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

torch = pytest.importorskip("torch")

from schooner_serve import frame  # noqa: E402
from schooner_serve.client import RouterClient  # noqa: E402
from schooner_serve.config import CONFIGS, encode  # noqa: E402
from schooner_serve.engine import StageEngine, generate  # noqa: E402
from schooner_serve.fake_holder import FakeHolder  # noqa: E402
from schooner_serve.kvpool import KVPool, PoolFull  # noqa: E402
from schooner_serve import worker as worker_mod  # noqa: E402

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = CONFIGS["tiny"]
SEED = 7
# (request, prompt, max_tokens, temperature, seed): greedy and seeded sampling, two prompt lengths.
REQS = [("g1", encode("hello world"), 24, 0.0, 0),
        ("s1", encode("the quick brown fox jumps"), 24, 0.8, 11),
        ("g2", encode("abc"), 16, 0.0, 0)]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


@pytest.fixture(scope="module")
def reference():
    e = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64)
    return {rid: generate(e, rid, p, n, t, s) for rid, p, n, t, s in REQS}


def spawn(*args):
    env = dict(os.environ, PYTHONPATH=HERE, SCHOONER_SERVE_THREADS="1")
    return subprocess.Popen([sys.executable, "-m", "schooner_serve.worker", "--model", "tiny", "--seed", str(SEED),
                             *args], cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def inproc(*args):
    """A worker in a thread of this process (fast: no torch import)."""
    port = free_port()
    w = worker_mod.Worker(worker_mod.parse_args(["--model", "tiny", "--seed", str(SEED),
                                                 "--listen", f"127.0.0.1:{port}", *args]))
    threading.Thread(target=w.serve, daemon=True).start()
    return w, f"127.0.0.1:{port}"


def submit_all(c, reqs=REQS, **extra):
    for rid, p, n, t, s in reqs:
        c.submit(rid, p, n, temperature=t, seed=s, stop=[], **extra)


# --- framing ----------------------------------------------------------------------------------

def test_frame_matches_hand_built_bytes():
    hdr = b'{"op":"ping"}'
    want = struct.pack(">I", len(hdr)) + hdr + struct.pack(">Q", 0)
    assert frame.encode({"op": "ping"}) == want
    payload = bytes(range(6))
    raw = b"\x00\x00\x00\x0d" + b'{"op":"xput"}' + b"\x00" * 7 + b"\x06" + payload
    h, p = frame.read(io.BytesIO(raw))
    assert h == {"op": "xput"} and p == payload
    # bf16 goes as its 16-bit pattern, little-endian
    t = torch.tensor([1.0, -2.0], dtype=torch.bfloat16)
    assert bytes(frame.tensor_bytes(t)) == b"\x80\x3f\x00\xc0"
    assert torch.equal(frame.tensor_from(b"\x80\x3f\x00\xc0", "bf16", [2]), t)


@pytest.mark.parametrize("raw", [
    struct.pack(">I", (64 << 10) + 1),                       # header over 64 KiB
    struct.pack(">I", 4) + b"[1] " + struct.pack(">Q", 0),   # not an object
    struct.pack(">I", 2) + b"{}" + struct.pack(">Q", 0),     # no op
])
def test_bad_frames_are_refused(raw):
    with pytest.raises(frame.FrameError):
        frame.read(io.BytesIO(raw))


def test_payload_limit_and_truncation():
    raw = frame.encode({"op": "put"}, b"x" * 10)
    with pytest.raises(frame.FrameError):
        frame.read(io.BytesIO(raw), max_payload=9)
    with pytest.raises(frame.Closed):
        frame.read(io.BytesIO(raw[:-1]))
    with pytest.raises(frame.Closed):
        frame.read(io.BytesIO(b""))


# --- the paged pool ---------------------------------------------------------------------------

def test_pool_allocate_free_admission():
    pool = KVPool(layers=2, num_blocks=4, block=16, kv_heads=2, head_dim=8)
    assert pool.kv.shape == (2, 2, 64, 2, 8)
    assert pool.blocks_needed(17) == 2 and pool.can_allocate(64) and not pool.can_allocate(65)
    assert pool.allocate("a", 20) == [0, 1]
    assert pool.slots("a", 14, 18) == [14, 15, 16, 17]
    pool.allocate("b", 16)
    assert pool.num_free == 1 and not pool.can_allocate(17)
    with pytest.raises(PoolFull):
        pool.allocate("c", 17)
    pool.release("a")
    assert pool.num_free == 3
    assert pool.allocate("c", 40) == [0, 1, 3]  # freed blocks are reused
    assert pool.slots("c", 31, 33) == [31, 48]
    with pytest.raises(PoolFull):
        pool.slots("c", 47, 49)
    assert KVPool.blocks_for_budget(1 << 20, 4, 16, 2, 16, 4) == 64


def test_admission_waits_for_blocks_and_reports_load(reference):
    # 5 blocks of 16: "big" reserves 12 + 68 positions = all 5 blocks; the others wait for them.
    w, addr = inproc("--kv-blocks", "5")
    c = RouterClient(addr)
    c.submit("big", REQS[0][1], 68, stop=[])
    submit_all(c, REQS[:2])
    c.submit("g1b", REQS[0][1], 24, stop=[])
    seen, deadline = [], time.time() + 10
    while "big" not in c.done and time.time() < deadline:
        seen.append(c.ping()["load"])
    assert {"running": 1, "waiting": 3, "kv_blocks_free": 0} in seen
    out = c.wait(["g1", "s1", "g1b"])
    assert out.keys() == {"g1", "s1", "g1b"} and min(c.tokens["big"]) == 0
    assert out["g1"] == reference["g1"] and out["s1"] == reference["s1"] and out["g1b"] == reference["g1"]
    idle = {"running": 0, "waiting": 0, "kv_blocks_free": 5}
    deadline = time.time() + 5
    while c.ping()["load"] != idle and time.time() < deadline:  # done goes out just before the free
        time.sleep(0.01)
    assert c.ping()["load"] == idle
    c.submit("huge", encode("x"), 200)
    deadline = time.time() + 5
    while not any(e.get("request") == "huge" for e in c.errors) and time.time() < deadline:
        time.sleep(0.01)
    assert [e["code"] for e in c.errors if e.get("request") == "huge"] == ["bad_request"]
    c.close()


# --- one stage, in process --------------------------------------------------------------------

def test_one_stage_greedy_and_seeded_cancel_and_errors(reference):
    w, addr = inproc()
    c = RouterClient(addr)
    submit_all(c)
    out = c.wait([r[0] for r in REQS])
    assert out == reference
    assert all(c.done[r]["reason"] == "length" and c.done[r]["steps"] == len(reference[r]) for r in out)
    # stop token: the default stop set is <eos>; here a token we know comes at step 3
    c.submit("st", REQS[0][1], 24, stop=[reference["g1"][3]])
    assert c.wait(["st"])["st"] == reference["g1"][:4] and c.done["st"]["reason"] == "stop"
    # cancel
    c.submit("long", encode("z"), 500, stop=[])
    c.wait_tokens("long", 2)
    c.submit_conn.send({"op": "cancel", "request": "long"})
    c.wait(["long"])
    assert c.done["long"]["reason"] == "cancelled" and 2 <= c.done["long"]["steps"] < 500
    # a bad submit is answered, the connection stays up
    c.submit("bad", [999999], 4)
    c.submit("bad2", [1], 0)
    deadline = time.time() + 5
    while len(c.errors) < 2 and time.time() < deadline:
        time.sleep(0.01)
    c.ping()
    assert {e["request"]: e["code"] for e in c.errors} == {"bad": "bad_request", "bad2": "bad_request"}
    c.close()
    # unknown op, then frames before hello / wrong version: error frame, then close
    for frames, code in [([{"op": "hello", "role": "router", "deployment": "d", "stage": 0, "version": 1},
                           {"op": "frobnicate"}], "bad_request"),
                         ([{"op": "submit"}], "bad_request"),
                         ([{"op": "hello", "role": "router", "deployment": "d", "stage": 0, "version": 9}], "version"),
                         ([{"op": "hello", "role": "chef", "deployment": "d", "stage": 0, "version": 1}], "bad_request")]:
        s = frame.Conn.connect(addr)
        for f in frames:
            s.send(f)
        replies = []
        try:
            while True:
                replies.append(s.recv()[0])
        except frame.Closed:
            pass
        assert replies[-1]["op"] == "error" and replies[-1]["code"] == code, replies
    s = socket.create_connection(frame.split_addr(addr))
    s.sendall(struct.pack(">I", 1 << 20))
    h, _ = frame.read(s.makefile("rb"))
    assert h["op"] == "error" and h["code"] == "bad_request"
    assert s.recv(1) == b""


# --- processes: two stages; failover ----------------------------------------------------------

def test_two_stages_and_failover_restore_and_reprefill(reference):
    p0, p1 = free_port(), free_port()
    holder = FakeHolder()
    s0 = spawn("--stage", "0", "--depth", "2", "--layers", "0:2", "--listen", f"127.0.0.1:{p0}",
               "--next", f"127.0.0.1:{p1}")
    s1 = spawn("--stage", "1", "--depth", "2", "--layers", "2:4", "--listen", f"127.0.0.1:{p1}",
               "--next", f"127.0.0.1:{p0}")
    pf = free_port()
    # one stage replicating to the holder, dying after 20 tokens in all (fault injection)
    victim = spawn("--listen", f"127.0.0.1:{pf}", "--holder", holder.addr, "--exit-after-tokens", "20")
    procs = [s0, s1, victim]
    try:
        # (b) two stages over TCP: submits to stage 0, tokens from stage 1
        c2 = RouterClient(f"127.0.0.1:{p0}", f"127.0.0.1:{p1}")
        submit_all(c2)
        assert c2.wait([r[0] for r in REQS], 60) == reference
        assert c2.done["g1"]["reason"] == "length"
        c2.submit("long", encode("z"), 500, stop=[])
        c2.wait_tokens("long", 2)
        c2.submit_conn.send({"op": "cancel", "request": "long"})
        c2.wait(["long"])
        assert c2.done["long"]["reason"] == "cancelled"
        deadline = time.time() + 5
        while c2.ping()["load"]["running"] and time.time() < deadline:
            time.sleep(0.01)
        assert c2.ping()["load"]["running"] == 0
        c2.close()

        # (c) failover: the stage dies mid-decode; a replacement restores from the replica
        cv = RouterClient(f"127.0.0.1:{pf}")
        submit_all(cv)
        assert victim.wait(60) == 3
        delivered = {r: [t for _, t in sorted(cv.tokens.get(r, {}).items())] for r, *_ in REQS}
        assert sum(map(len, delivered.values())) == 20
        assert all(delivered[r] == reference[r][:len(delivered[r])] for r in delivered)
        # the router's resume point: what it delivered, but no further than the replica's acked step + 1
        resume = {r: min(len(delivered[r]), holder.acked_step(r) + 1) for r in delivered}
        assert any(resume[r] > 1 for r in resume)

        def resubmit(c, **extra):
            for rid, p, n, t, s in REQS:
                k = resume[rid]
                if k >= n:
                    continue
                c.submit(rid, p, n, temperature=t, seed=s, stop=[], resume_from=k,
                         generated=delivered[rid][:k], **extra)
            return c.wait([r for r, *_ in REQS if resume[r] < [q for q in REQS if q[0] == r][0][2]], 60)

        gets = holder.gets
        w2, addr2 = inproc("--holder", holder.addr)
        c3 = RouterClient(addr2)
        out = resubmit(c3)
        for rid in out:
            k = resume[rid]
            assert out[rid][:k] == [] or min(c3.tokens[rid]) == k  # tokens come from step resume_from on
            assert delivered[rid][:k] + out[rid] == reference[rid], rid
        assert holder.gets - gets == sum(1 for r in resume if resume[r] > 0)
        assert w2.engine.restore_stats and all(s["positions"] > 0 for s in w2.engine.restore_stats)
        c3.close()

        # (d) the re-prefill baseline gives the same tokens (no holder: recompute prompt + generated)
        w3, addr3 = inproc("--resume-mode", "reprefill")
        c4 = RouterClient(addr3)
        out2 = resubmit(c4)
        assert out2 == out
        assert not w3.engine.restore_stats
        c4.close()
        # restoring from a holder that lacks the request fails cleanly with restore_failed
        w4, addr4 = inproc("--holder", FakeHolder().addr)
        c5 = RouterClient(addr4)
        c5.submit("g1", REQS[0][1], 24, stop=[], resume_from=3, generated=reference["g1"][:3])
        c5.wait(["g1"])
        assert c5.done["g1"]["code"] == "restore_failed"
        c5.close()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        holder.close()
