"""schooner_serve on CPU with the tiny model: framing, the paged pool, one stage, two stages as
two processes, failover with restore from a replica and restore against re-prefill. The holder is
FakeHolder (a Python test double of the Go holder) and, when SCHOONER_BIN names a built `schooner`
binary (go build -o bin/schooner ./cmd/schooner), also the real Go holder (`schooner kvcache
serve`). Run: /usr/bin/python3 -m pytest tests/test_serve.py"""

import io
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

import re
import urllib.request

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


class GoHolder:
    """The real KV-cache holder, `schooner kvcache serve`, in a subprocess; the same test surface
    as FakeHolder (addr, acked_step, gets, close)."""

    def __init__(self, binary, budget="1GiB", socket_path=""):
        mport = free_port()
        self.metrics = f"127.0.0.1:{mport}"
        self.p = subprocess.Popen([binary, "kvcache", "serve", "--listen", "127.0.0.1:0", "--socket", socket_path,
                                   "--budget", budget, "--metrics", self.metrics],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.p.stdout.readline()
        m = re.search(r"listening on tcp (\S+)", line)
        if not m:
            self.close()
            raise RuntimeError(f"schooner kvcache serve said {line!r}")
        self.addr = m.group(1)
        self.unix = ""
        if socket_path:
            line = self.p.stdout.readline()
            if "listening on unix" not in line:
                self.close()
                raise RuntimeError(f"schooner kvcache serve said {line!r}")
            self.unix = "unix:" + socket_path
        threading.Thread(target=self.p.stdout.read, daemon=True).start()

    def acked_step(self, request, stage=0, deployment="default"):
        c = frame.Conn.connect(self.addr)
        try:
            c.handshake("reader", deployment, stage)
            c.send({"op": "list"})
            h, _ = c.recv()
            return next((x["acked_step"] for x in h["requests"] if x["request"] == request), -1)
        finally:
            c.close()

    @property
    def gets(self):
        deadline = time.time() + 10
        while True:
            try:
                text = urllib.request.urlopen(f"http://{self.metrics}/metrics", timeout=5).read().decode()
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        m = re.search(r"^schooner_kvcache_gets_total (\S+)$", text, re.M)
        return int(float(m.group(1))) if m else 0

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


HOLDERS = ["fake", "go"]


def make_holder(kind, **kw):
    if kind == "fake":
        return FakeHolder(**kw)
    binary = os.environ.get("SCHOONER_BIN") or os.path.join(os.path.dirname(os.path.dirname(HERE)), "bin", "schooner")
    if not os.access(binary, os.X_OK):
        pytest.skip("the Go holder is not built: set SCHOONER_BIN to a schooner binary (go build ./cmd/schooner)")
    return GoHolder(binary, **({"budget": str(kw["budget"])} if "budget" in kw else {}),
                    **({"socket_path": kw["socket_path"]} if "socket_path" in kw else {}))


@pytest.fixture(params=HOLDERS)
def holder_kind(request):
    return request.param


# Workers run on the CPU here, in f32, as the reference does, also on a machine with a GPU (where
# a worker would otherwise take the GPU and bf16, and other tokens).
def spawn(*args):
    env = dict(os.environ, PYTHONPATH=HERE, SCHOONER_SERVE_THREADS="1")
    return subprocess.Popen([sys.executable, "-m", "schooner_serve.worker", "--model", "tiny", "--seed", str(SEED),
                             "--device", "cpu", *args], cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def inproc(*args):
    """A worker in a thread of this process (fast: no torch import)."""
    port = free_port()
    w = worker_mod.Worker(worker_mod.parse_args(["--model", "tiny", "--seed", str(SEED), "--device", "cpu",
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
    struct.pack(">I", (4 << 20) + 1),                        # header over 4 MiB
    struct.pack(">I", 4) + b"[1] " + struct.pack(">Q", 0),   # not an object
    struct.pack(">I", 2) + b"{}" + struct.pack(">Q", 0),     # no op
])
def test_bad_frames_are_refused(raw):
    with pytest.raises(frame.FrameError):
        frame.read(io.BytesIO(raw))


def test_a_submit_of_the_longest_prompt_fits_a_frame():
    # serving's largest max_context (262,144 tokens), each id as long as JSON makes it: a 32k
    # prompt did not fit the 64 KiB header of before.
    prompt = [999_999] * (1 << 18)
    h, _ = frame.read(io.BytesIO(frame.encode({"op": "submit", "request": "r", "prompt": prompt})))
    assert h["prompt"] == prompt


def test_payload_limit_and_truncation():
    raw = frame.encode({"op": "put"}, b"x" * 10)
    with pytest.raises(frame.FrameError):
        frame.read(io.BytesIO(raw), max_payload=9)
    with pytest.raises(frame.Closed):
        frame.read(io.BytesIO(raw[:-1]))
    with pytest.raises(frame.Closed):
        frame.read(io.BytesIO(b""))


def test_large_payloads_come_in_pooled_buffers_used_again():
    pool = frame.PayloadPool(keep=2, min_size=8)
    big, small = bytes(range(200)) * 5, b"tiny"
    raw = b"".join(frame.encode({"op": "forward"}, x) for x in (big, small, big, big[:600], big))
    f = io.BufferedReader(io.BytesIO(raw), buffer_size=64)
    _, p1 = frame.read(f, pool=pool)
    assert isinstance(p1, memoryview) and bytes(p1) == big and pool.made == 1
    _, p2 = frame.read(f, pool=pool)
    assert p2 == small and isinstance(p2, bytes), "under min_size: read as before"
    pool.give(p2)  # ignored
    pool.give(p1)
    _, p3 = frame.read(f, pool=pool)
    assert bytes(p3) == big and pool.made == 1, "the buffer given back is used again"
    _, p4 = frame.read(f, pool=pool)
    assert bytes(p4) == big[:600] and pool.made == 2, "p3 is still out: a second buffer"
    x = frame.tensor_from(p4, "f32", [150])  # a forward's view of the payload, still alive
    pool.give(p4)  # not taken back while x views it
    pool.give(p3)
    _, p5 = frame.read(f, pool=pool)
    assert bytes(p5) == big and pool.made == 2
    assert bytes(frame.tensor_bytes(x)) == big[:600], "the buffer x views was not read into again"
    with pytest.raises(frame.Closed):
        frame.read(io.BufferedReader(io.BytesIO(raw[:500]), buffer_size=64), pool=pool)


def test_bench_hop_runs_both_ways(tmp_path, capsys):
    from schooner_serve import bench_hop
    out = tmp_path / "hop.json"
    bench_hop.main(["--rows", "64", "--hidden", "1024", "--frames", "2", "--trials", "2", "--out", str(out)])
    got = json.loads(out.read_text())
    assert got["bytes"] == 64 * 1024 * 2 and [len(v) for v in got["seconds_per_frame"].values()] == [2, 2]
    assert "pooled is" in capsys.readouterr().out


# --- the paged pool ---------------------------------------------------------------------------

def test_pool_allocate_free_admission():
    pool = KVPool(layers=2, num_blocks=4, block=16, kv_heads=2, head_dim=8)
    assert pool.kv.shape == (2, 2, 64 + 1, 2, 8) and pool.scratch == 64  # + the scratch slot
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
    s.sendall(struct.pack(">I", frame.MAX_HEADER + 1))
    h, _ = frame.read(s.makefile("rb"))
    assert h["op"] == "error" and h["code"] == "bad_request"
    assert s.recv(1) == b""


# --- processes: two stages; failover ----------------------------------------------------------

def test_two_stages_and_failover_restore_and_reprefill(reference, holder_kind):
    p0, p1 = free_port(), free_port()
    holder = make_holder(holder_kind)
    s0 = spawn("--stage", "0", "--depth", "2", "--layers", "0:2", "--listen", f"127.0.0.1:{p0}",
               "--next", f"127.0.0.1:{p1}")
    s1 = spawn("--stage", "1", "--depth", "2", "--layers", "2:4", "--listen", f"127.0.0.1:{p1}",
               "--next", f"127.0.0.1:{p0}")
    pf = free_port()
    # one stage replicating to the holder, dying after 20 tokens in all (fault injection); it lets
    # its replica catch up first, so that the restore below is exercised however slow the machine
    # (without --exit-flush a loaded CI runner may die before any step is acked: resume 0 or 1)
    victim = spawn("--listen", f"127.0.0.1:{pf}", "--holder", holder.addr, "--exit-after-tokens", "20",
                   "--exit-flush")
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
        empty = make_holder(holder_kind)
        procs_h = [empty]
        w4, addr4 = inproc("--holder", empty.addr)
        c5 = RouterClient(addr4)
        c5.submit("g1", REQS[0][1], 24, stop=[], resume_from=3, generated=reference["g1"][:3])
        c5.wait(["g1"])
        assert c5.done["g1"]["code"] == "restore_failed"
        # the message says which stage held what, and where it looked
        assert f"stage 0: 0 (holder {empty.addr}: no replica" in c5.done["g1"]["message"], c5.done["g1"]["message"]
        c5.close()
        # the router's answer to restore_failed: the same resubmit with resume_mode reprefill
        c5b = RouterClient(addr4)
        c5b.submit("g1", REQS[0][1], 24, stop=[], resume_from=3, generated=reference["g1"][:3],
                   resume_mode="reprefill")
        assert c5b.wait(["g1"])["g1"] == reference["g1"][3:]
        c5b.close()
        for h in procs_h:
            h.close()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        holder.close()


# --- the holder's side of section 3, against the test double and the Go holder --------------------

def test_holder_protocol(holder_kind):
    """The bytes the worker relies on, answered identically by FakeHolder and the Go holder."""
    per_tok = 2 * 2 * 4 * 4  # [2, kv_heads 2, head_dim 4] f32
    h = make_holder(holder_kind, budget=per_tok * 2 * 3 + per_tok * 2 * 2)  # 2 layers: a 3-token prompt + 2 steps
    try:
        c = frame.Conn.connect(h.addr)
        c.handshake("writer", "dep", 1)

        def put(rid, layer, t0, t1, **extra):
            kv = torch.full((2, 2, t1 - t0, 4), float(layer), dtype=torch.float32)
            c.send({"op": "put", "request": rid, "kind": "prompt", "layer": layer, "tokens": [t0, t1],
                    "dtype": "f32", "shape": list(kv.shape), **extra}, frame.tensor_bytes(kv))
            return c.recv()[0]

        def put_step(step, entries):
            kv = torch.arange(len(entries) * 2 * 2 * 2 * 4, dtype=torch.float32).view(len(entries), 2, 2, 2, 4)
            c.send({"op": "put_step", "step": step, "entries": entries, "layers": [2, 4], "dtype": "f32",
                    "shape": list(kv.shape)}, frame.tensor_bytes(kv))
            return [c.recv()[0] for _ in entries]

        assert put("a", 2, 0, 3) == {"op": "ack", "request": "a", "step": -1, "layer": 2, "tokens": [0, 3]}
        # a step before the cache is complete: conflict for that request, the connection stays
        (e,) = put_step(1, [{"request": "a", "token": 3, "step": 1}])
        assert (e["op"], e["code"], e["request"], e["step"]) == ("error", "conflict", "a", 1)
        assert put("a", 3, 0, 3, last=True, layers=[2, 4], step=0)["step"] == 0
        assert put("a", 3, 3, 4)["code"] == "conflict"  # a put after the last
        # per-entry steps; a step already held is acked again; a gap is a conflict
        acks = put_step(0, [{"request": "a", "token": 3, "step": 1}])
        assert acks == [{"op": "ack", "request": "a", "step": 1}]
        acks = put_step(1, [{"request": "a", "token": 3, "step": 1}, {"request": "a", "token": 4, "step": 2}])
        assert [x["step"] for x in acks] == [1, 2] and all(x["op"] == "ack" for x in acks)
        (e,) = put_step(4, [{"request": "a", "token": 6}])
        assert (e["code"], e["step"]) == ("conflict", 4)
        # the budget: a put beyond it is refused as full, nothing of it held
        assert put("b", 2, 0, 1)["code"] == "full"
        # a reader sees positions [0, P+acked) in chunks, then end
        r = frame.Conn.connect(h.addr)
        r.handshake("reader", "dep", 1)
        r.send({"op": "get", "request": "a"})
        ch, p = r.recv()
        assert (ch["op"], ch["layers"], ch["tokens"], ch["shape"]) == ("chunk", [2, 4], [0, 5], [2, 2, 2, 5, 4])
        t = frame.tensor_from(p, "f32", ch["shape"])
        assert torch.equal(t[1, :, :, :3], torch.full((2, 2, 3, 4), 3.0))
        assert r.recv()[0] == {"op": "end", "request": "a", "acked_step": 2}
        r.send({"op": "get", "request": "nope"})
        assert r.recv()[0] == {"op": "end", "request": "nope", "acked_step": -1}
        r.send({"op": "list"})
        assert r.recv()[0] == {"op": "held", "requests": [{"request": "a", "acked_step": 2, "bytes": 5 * 2 * per_tok}]}
        # another stage's key holds nothing of it
        assert h.acked_step("a", stage=0, deployment="dep") == -1 and h.acked_step("a", stage=1, deployment="dep") == 2
        c.send({"op": "drop", "request": "a"})
        assert c.recv()[0] == {"op": "dropped", "request": "a", "requests": 1, "bytes": 5 * 2 * per_tok}
        c.send({"op": "drop_deployment"})
        assert c.recv()[0] == {"op": "dropped", "deployment": "dep", "requests": 0, "bytes": 0}
        # an unknown op: bad_request, then the connection closes
        c.send({"op": "frobnicate"})
        assert c.recv()[0]["code"] == "bad_request"
        with pytest.raises(frame.Closed):
            c.recv()
        r.close()
    finally:
        h.close()


def test_shm_restore_matches_reprefill_and_chunks(tmp_path):
    """Restore over the Go holder's unix socket (the shm answer: one memory file passed with the
    frame, mapped) gives the bytes of the chunk path and the next token of a re-prefill."""
    from schooner_serve.replicate import fetch_replica
    h = make_holder("go", socket_path=str(tmp_path / "kv.sock"))
    try:
        rids, plen, K = ["s0", "s1", "s2"], 150, 12  # > 100 tokens: several chunks
        g = torch.Generator().manual_seed(3)
        ps = [torch.randint(0, 200, (plen,), generator=g).tolist() for _ in rids]

        def prefill(e, seqs, step):
            ents = [{"request": r, "step": step, "positions": [0, len(x)]} for r, x in zip(rids, seqs)]
            return e.sample(ents, e.forward("prefill", ents, [t for x in seqs for t in x]))

        def decode(e, k, last):
            ents = [{"request": r, "step": k, "positions": [plen + k - 1, plen + k]} for r in rids]
            return e.sample(ents, e.forward("decode", ents, last))

        w = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=h.unix, deployment="shm")
        for r in rids:
            w.begin(r, plen + K + 4)
        toks = [prefill(w, ps, 0)]
        for k in range(1, K):
            toks.append(decode(w, k, toks[-1]))
        assert w.writer.flush(30)
        w.writer.close()
        gen = [[t[i] for t in toks] for i in range(len(rids))]

        # the shm answer holds the chunk path's bytes
        a = fetch_replica(h.unix, "shm", 0, "s1")
        b = fetch_replica(h.addr, "shm", 0, "s1")
        assert a.shm and not b.shm and a.acked == b.acked == K - 1
        assert [(l, t) for l, t, _ in a.chunks] == [(l, t) for l, t, _ in b.chunks] and len(a.chunks) > 1
        assert all(torch.equal(x, y) for (_, _, x), (_, _, y) in zip(a.chunks, b.chunks))
        a.close()  # b (the chunk path's copy) stays for the comparisons below

        # restored through memory lent to the holder (the default on a unix socket), and with
        # lending off through a memory file per request: the same next token either way
        restored = []
        for lend in (None, "0"):
            if lend is not None:
                os.environ["SCHOONER_KV_LEND"] = lend
            try:
                e = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=h.unix, deployment="shm")
            finally:
                os.environ.pop("SCHOONER_KV_LEND", None)
            assert (e.reader is None) == (lend == "0")
            assert e.reader is None or not os.path.exists(e.reader.path), "the lent file is unlinked once mapped"
            if e.reader is not None:
                # streamed: every chunk's span is announced once, in order, and the bytes are the
                # chunk path's
                got = []
                r = e.reader.fetch("s1", on_filled=got.extend)
                assert [(l, t) for l, t, _ in got] == [(l, t) for l, t, _ in r.chunks] and len(got) > 1
                assert all(x is y for (_, _, x), (_, _, y) in zip(got, r.chunks)) and r.lent and r.acked == K - 1
                assert all(torch.equal(x, y) for (_, _, x), (_, _, y) in zip(r.chunks, b.chunks))
                r.close()
            for r in rids:
                assert e.restore(r, plen + K - 1, plen + K + 4) == plen + K - 1
            assert all(s["shm"] and s["lent"] == s["streamed"] == (lend is None) for s in e.restore_stats)
            if lend is None:
                # the lent memory's connection gone (a holder restart): restores go on without it
                e.reader.conn.close()
                e.pool.release("s0")  # forget it here only: the holder keeps its replica
                assert e.restore("s0", plen + K - 1, plen + K + 4) == plen + K - 1
                assert e.reader is None and not e.restore_stats[-1]["lent"]
            restored.append(decode(e, K, [x[-1] for x in gen]))
            e.close()
        assert restored[0] == restored[1]
        restored = restored[0]

        f = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64)
        for r in rids:
            f.begin(r, plen + K + 4)
        assert restored == prefill(f, [p + x for p, x in zip(ps, gen)], K)
        assert restored == decode(w, K, toks[-1])  # and the stage that never failed
    finally:
        h.close()


def test_step_trace_says_each_part_of_a_step(capsys, monkeypatch):
    """SCHOONER_SERVE_TRACE=1 (worker.TRACE) prints each timed part of a step on stderr; off, nothing."""
    w = worker_mod.Worker(worker_mod.parse_args(["--model", "tiny", "--seed", str(SEED), "--device", "cpu"]))
    capsys.readouterr()
    t0 = time.perf_counter()
    assert w._trace("forward", t0, kind="prefill") == t0
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(worker_mod, "TRACE", True)
    assert w._trace("forward", t0, kind="prefill", rows=3) > t0
    assert re.fullmatch(r"schooner_serve: trace stage 0 forward [0-9.]+ ms kind=prefill rows=3\n", capsys.readouterr().err)
    w.engine.close()


def test_restore_from_the_holders_arena_equals_the_copied_restore(tmp_path, monkeypatch):
    """With the arena asked for (SCHOONER_KV_ARENA=1; by default only on a GPU), the holder keeps
    prompts in shared memory the reader maps read-only, and a streamed restore takes the prompt's
    pieces from there and only the decode steps through the lent memory: the pages and the next
    token are those of the restore that copies everything."""
    h = make_holder("go", socket_path=str(tmp_path / "kv.sock"), budget="32MiB")
    try:
        monkeypatch.setenv("SCHOONER_KV_ARENA", "1")  # the writer's lend makes the arena
        rids, plen, K = ["a0", "a1"], 140, 9
        g = torch.Generator().manual_seed(5)
        ps = [torch.randint(0, 200, (plen,), generator=g).tolist() for _ in rids]
        w = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=h.unix, deployment="arena")
        assert w.reader is not None and w.reader.arena is not None and w.reader.arena_size == 32 << 20
        for r in rids:
            w.begin(r, plen + K + 4)
        ents = [{"request": r, "step": 0, "positions": [0, plen]} for r in rids]
        toks = [w.sample(ents, w.forward("prefill", ents, [t for x in ps for t in x]))]
        for k in range(1, K):
            ents = [{"request": r, "step": k, "positions": [plen + k - 1, plen + k]} for r in rids]
            toks.append(w.sample(ents, w.forward("decode", ents, toks[-1])))
        assert w.writer.flush(30)
        w.writer.close()

        pools, nexts = [], []
        for arena in ("1", "0"):
            monkeypatch.setenv("SCHOONER_KV_ARENA", arena)
            e = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=h.unix, deployment="arena")
            assert (e.reader.arena is not None) == (arena == "1")
            for r in rids:
                assert e.restore(r, plen + K - 1, plen + K + 4) == plen + K - 1
            assert all(st["streamed"] and st["arena"] == (arena == "1") for st in e.restore_stats)
            # the host's share of a streamed restore is counted: pieces placed, time issuing them
            assert all(st["pieces"] > 0 and 0 < st["place_s"] <= st["fetch_s"] for st in e.restore_stats)
            pools.append([e.pool.kv[:, :, e.pool.slot_index(r, 0, plen + K - 1)].clone() for r in rids])
            ents = [{"request": r, "step": K, "positions": [plen + K - 1, plen + K]} for r in rids]
            nexts.append(e.sample(ents, e.forward("decode", ents, toks[-1])))
            e.close()
        assert all(torch.equal(x, y) for x, y in zip(*pools))
        ents = [{"request": r, "step": K, "positions": [plen + K - 1, plen + K]} for r in rids]
        assert nexts[0] == nexts[1] == w.sample(ents, w.forward("decode", ents, toks[-1]))
        w.close()
    finally:
        h.close()


def test_warm_up_prefill_leaves_nothing_behind(capsys):
    """A worker's warm-up prefill (on by default on a GPU) runs each stage's layers once and gives
    its KV blocks back; it replicates nothing."""
    holder = FakeHolder()
    try:
        for layers in ("0:2", "2:4"):
            w = worker_mod.Worker(worker_mod.parse_args(
                ["--model", "tiny", "--seed", str(SEED), "--device", "cpu", "--layers", layers, "--stage",
                 "0" if layers == "0:2" else "1", "--depth", "2", "--kv-blocks", "8", "--warmup-tokens", "500",
                 "--holder", holder.addr, "--deployment", "warm"]))
            err = capsys.readouterr().err
            assert "warm-up prefill of 127 positions" in err and "warm-up prefill of 127 positions:" not in err
            assert w.engine.pool.num_free == 8 and not w.engine.pool.tables and not w.engine.params
            assert w.engine.writer is not None and w.engine.writer.flush(10) and w.engine.writer.frames == 0
            w.engine.close()
    finally:
        holder.close()


def test_streamed_restore_of_a_replica_that_does_not_fit_fails_and_reads_on(tmp_path):
    """A replica whose layers do not cover the restoring stage fails its restore (RestoreFailed)
    after its streamed answer was read whole: the lent memory's connection answers the next get."""
    from schooner_serve.engine import RestoreFailed
    h = make_holder("go", socket_path=str(tmp_path / "kv.sock"))
    try:
        w = StageEngine(TINY, SEED, 0, 2, kv_blocks=64, holder=h.unix, deployment="fit")
        prompt = list(range(1, 120))
        for r in ("x", "y"):
            w.begin(r, len(prompt) + 4)
            e = [{"request": r, "step": 0, "positions": [0, len(prompt)]}]
            w.forward("prefill", e, prompt)
        assert w.writer.flush(30)
        w.writer.close()
        e = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=h.unix, deployment="fit")
        assert e.reader is not None
        with pytest.raises(RestoreFailed, match="layers 0:2"):
            e.restore("x", len(prompt), len(prompt) + 4)
        assert e.reader is not None
        r = e.reader.fetch("y", on_filled=lambda chunks: None)
        assert r.lent and r.acked == 0 and r.chunks[-1][1][1] == len(prompt)
        r.close()
        e.close()
    finally:
        h.close()


def test_a_stage_given_a_holder_that_is_gone_serves_and_replicates_once_told_a_live_one(capsys):
    """A replacement can be started with the holder address of a neighbour's machine that has
    migrated meanwhile: it serves without replicating (said on stdout) rather than dying, and the
    holder its node agent gives it next gets every request's cache in full."""
    gone = f"127.0.0.1:{free_port()}"  # nothing listens there
    e = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=gone)
    assert e.writer is None
    assert gone in capsys.readouterr().out
    e.begin("r", 16, {"temperature": 0.0, "seed": 0, "max_tokens": 8, "stop": [], "reserve": 16})
    ents = [{"request": "r", "step": 0, "positions": [0, 8]}]
    first = e.sample(ents, e.forward("prefill", ents, list(range(1, 9))))
    assert len(first) == 1
    h = FakeHolder()
    try:
        e.set_holder(h.addr)
        assert e.writer is not None and e.writer.active
        assert e.writer.flush(30)
        assert h.acked_step("r", stage=0) == 0, "the prompt's cache, held before a holder was given, sent in full"
        e.close()
    finally:
        h.close()


def test_a_stage_replicates_again_once_its_holder_answers_at_the_same_address(capsys):
    """A holder back at the address the stage has (its node agent restarted) gets no new address
    from the agent: the stage tries it again as requests begin, at most once a second."""
    addr = f"127.0.0.1:{free_port()}"
    e = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=addr)
    assert e.writer is None
    e.begin("r", 16, {"temperature": 0.0, "seed": 0, "max_tokens": 8, "stop": [], "reserve": 16})
    ents = [{"request": "r", "step": 0, "positions": [0, 8]}]
    e.sample(ents, e.forward("prefill", ents, list(range(1, 9))))
    e._prober.join(10)  # the first try, as "r" began: nothing listened yet
    h = FakeHolder(listen=addr)
    try:
        e.begin("s", 16)  # within the second: not tried again
        assert e.writer is None and not e._prober.is_alive()
        e._holder_retry_at = 0.0  # the second has passed: tried from a thread
        e.begin("t", 16)
        e._prober.join(10)
        assert e.writer is None, "taken up as the next request begins, not from the thread"
        e.begin("u", 16)
        assert e.writer is not None and e.writer.flush(30)
        assert h.acked_step("r", stage=0) == 0, "the cache held meanwhile sent in full"
        assert "answers again" in capsys.readouterr().out
        e.close()
    finally:
        h.close()


def test_peers_tell_a_stage_its_successor_late(reference):
    """The last stage starts before the first exists (no --next): the node agent's peers frame
    gives it the first stage's address later, and the pipeline then serves exactly as one
    started with every address; a new holder gets the whole cache re-sent."""
    p0, p1 = free_port(), free_port()
    s1 = spawn("--stage", "1", "--depth", "2", "--layers", "2:4", "--listen", f"127.0.0.1:{p1}")
    s0 = spawn("--stage", "0", "--depth", "2", "--layers", "0:2", "--listen", f"127.0.0.1:{p0}",
               "--next", f"127.0.0.1:{p1}")
    holder = FakeHolder()
    try:
        deadline = time.time() + 60
        while True:  # the process imports torch first
            try:
                node = frame.Conn.connect(f"127.0.0.1:{p1}", timeout=30)
                break
            except OSError:
                assert time.time() < deadline, "the last stage never listened"
                time.sleep(0.05)
        node.handshake("node", "default", 1)
        node.send({"op": "peers", "next": f"127.0.0.1:{p0}"})
        h, _ = node.recv()
        assert h["op"] == "peers_ok"
        node.send({"op": "peers", "next": f"127.0.0.1:{p0}"})  # the same again is harmless
        assert node.recv()[0]["op"] == "peers_ok"
        c = RouterClient(f"127.0.0.1:{p0}", f"127.0.0.1:{p1}")
        submit_all(c)
        assert c.wait([r[0] for r in REQS], 60) == reference
        # a request in flight when the holder arrives is replicated in full to it
        c.submit("late", encode("hello"), 400, stop=[])
        c.wait_tokens("late", 3)
        node.send({"op": "peers", "holder": holder.addr})
        assert node.recv()[0]["op"] == "peers_ok"
        deadline = time.time() + 30
        while holder.acked_step("late", stage=1) < 1 and time.time() < deadline:
            time.sleep(0.02)
        assert holder.acked_step("late", stage=1) >= 1, "the cache held when the holder came was re-sent, then kept up"
        c.submit_conn.send({"op": "cancel", "request": "late"})
        c.wait(["late"])
        node.close()
        c.close()
    finally:
        for p in (s0, s1):
            p.kill()
            p.wait()
        holder.close()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_cuda_graph_decode_matches_eager_across_buckets():
    """Decode steps replayed from CUDA graphs give the eager steps' tokens, for a batch whose rows
    stand at different lengths, across a context bucket's edge (256) and with a row leaving."""
    lens, steps = [250, 100, 30], 12
    g = torch.Generator().manual_seed(5)
    ps = [torch.randint(0, 200, (n,), generator=g).tolist() for n in lens]
    rids = ["a", "b", "c"]

    def run(graphs: bool):
        os.environ["SCHOONER_CUDA_GRAPHS"] = "1" if graphs else "0"
        try:
            e = StageEngine(TINY, SEED, 0, TINY.layers, device="cuda", dtype=torch.float32, kv_blocks=128)
        finally:
            os.environ.pop("SCHOONER_CUDA_GRAPHS", None)
        assert (e.graphs is not None) == graphs
        out = {}
        for r, p in zip(rids, ps):
            e.begin(r, len(p) + steps + 1)
            ents = [{"request": r, "step": 0, "positions": [0, len(p)]}]
            out[r] = e.sample(ents, e.forward("prefill", ents, p))
        for k in range(1, steps):
            live = [r for r in rids if not (r == "c" and k > steps // 2)]  # c leaves half way
            ents = [{"request": r, "step": k, "positions": [lens[rids.index(r)] + k - 1, lens[rids.index(r)] + k]}
                    for r in live]
            toks = e.sample(ents, e.forward("decode", ents, [out[r][-1] for r in live]))
            for r, t in zip(live, toks):
                out[r].append(t)
        return out, e

    eager, _ = run(False)
    graphed, e = run(True)
    assert graphed == eager
    # batch 3 pads to 4 below 256 positions; once c has left (k = 7) a crosses 256: 2 at 512
    assert sorted(e.graphs.graphs) == [(2, 512), (4, 256)]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="page-locked memory needs CUDA")
def test_pinned_pool_reuses_buffers_within_its_bound():
    from schooner_serve.replicate import _PinnedPool
    pool = _PinnedPool(keep_bytes=3 << 20)
    a = pool.take(1 << 20)
    assert a.is_pinned()
    pool.give(a)
    assert pool.take(1 << 20).data_ptr() == a.data_ptr()  # the same buffer again
    big = [pool.take(2 << 20) for _ in range(2)]
    for b in big:
        pool.give(b)
    assert pool._kept == 2 << 20  # the second 2 MiB would pass the 3 MiB bound: not kept


def test_a_restore_waits_for_the_prompt_a_handed_over_stage_still_streams(monkeypatch):
    """A stage handed over on a notice keeps streaming what it queued; its replacement restoring
    meanwhile waits at the holder for the prompt (get's wait_ms) instead of finding it incomplete
    and having the router recompute it. Without the wait it finds nothing."""
    h = FakeHolder(delay_s=0.1)  # each put lands 0.1 s after the one before: a writer still sending
    try:
        plen = 40
        prompt = torch.randint(0, 200, (plen,), generator=torch.Generator().manual_seed(5)).tolist()

        def prefill_on_old_stage(rid):
            monkeypatch.setattr(frame, "PROCESS", "old-stage")  # the writer's hello names its process
            old = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=h.addr, deployment="handover")
            old.begin(rid, plen + 8)
            ents = [{"request": rid, "step": 0, "positions": [0, plen]}]
            old.sample(ents, old.forward("prefill", ents, prompt))
            monkeypatch.setattr(frame, "PROCESS", "new-stage")
            return old

        old = prefill_on_old_stage("late")
        new = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=h.addr, deployment="handover",
                          restore_wait_s=10)
        t = time.monotonic()
        assert new.restore("late", plen, plen + 8) == plen, "the whole prompt, once the old writer sent it"
        assert 0.05 < time.monotonic() - t < 5 and h.get_waits == 1
        old.writer.close()

        old = prefill_on_old_stage("early")
        hasty = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=h.addr, deployment="handover")
        assert hasty.restore("early", plen, plen + 8) == 0, "without waiting: nothing complete yet"
        assert h.get_waits == 1
        old.writer.close()
    finally:
        h.close()


def test_sigterm_lets_the_replication_writer_send_what_it_queued():
    """A worker stopped with SIGTERM (its stage handed over, scaled away or stopped) exits once
    its writer has sent what it queued: the holder then has the prompt it was still streaming.
    The default SIGTERM killed the process with the queue, and the replacement recomputed."""
    h = FakeHolder(delay_s=0.05)  # the holder takes each frame 50 ms apart: the queue builds up
    port = free_port()
    w = spawn("--listen", f"127.0.0.1:{port}", "--holder", h.addr, "--term-flush", "30")
    try:
        c = RouterClient(f"127.0.0.1:{port}")
        # long enough to be running at the SIGTERM: the writer's full queue slows it to the holder's pace
        c.submit("q", encode("a prompt whose replica is still on its way"), 400, stop=[])
        c.wait_tokens("q", 2)
        assert h.acked_step("q") < 0, "the prompt has not all landed yet (else the test shows nothing)"
        w.terminate()
        assert w.wait(30) == 0
        err = w.stderr.read().decode()
        assert "SIGTERM: replication flushed" in err, err[-2000:]
        assert h.acked_step("q") >= 0, "the prompt it computed is complete at the holder"
        c.close()
    finally:
        if w.poll() is None:
            w.kill()
        h.close()


def test_handoff_and_expect_submits_are_checked():
    # Prompt–token disaggregation's submit fields (the router's disagg.go): a handoff is a new
    # request for token 0 alone on a worker with a holder; expect goes with a resumed request.
    w, addr = inproc()  # no --holder
    c = RouterClient(addr)
    c.submit("h2", encode("x"), 2, handoff=True)
    c.submit("h1", encode("x"), 1, handoff=True)
    c.submit("e0", encode("x"), 4, expect=True)
    c.submit("hx", encode("x"), 1, handoff="yes")
    deadline = time.time() + 5
    while len(c.errors) < 4 and time.time() < deadline:
        time.sleep(0.01)
    c.ping()
    errs = {e["request"]: e["message"] for e in c.errors}
    assert set(errs) == {"h2", "h1", "e0", "hx"}
    assert "max_tokens 1" in errs["h2"] and "--holder" in errs["h1"] and "resume_from" in errs["e0"]
    assert "booleans" in errs["hx"]
    c.close()
