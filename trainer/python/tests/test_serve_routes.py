"""Steps follow the router's route while a pipeline changes hands (docs/serving-protocol.md,
section 2): a last stage still told the old first stage answers the new one; a stale `sampled`
is dropped; a first stage whose router connection closes sets its requests aside, and one whose
step never comes back closes its routers so that they resubmit; set-aside caches expire. CPU,
the tiny model, workers in threads of this process. Run: /usr/bin/python3 -m pytest
tests/test_serve_routes.py"""

import socket
import threading
import time

import pytest

torch = pytest.importorskip("torch")

from schooner_serve import frame  # noqa: E402
from schooner_serve.client import RouterClient  # noqa: E402
from schooner_serve.config import encode  # noqa: E402
from schooner_serve.engine import StageEngine, generate  # noqa: E402

from .test_serve import REQS, SEED, TINY, inproc, submit_all  # noqa: E402


@pytest.fixture(scope="module")
def reference():
    e = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64)
    out = {rid: generate(e, rid, p, n, t, s) for rid, p, n, t, s in REQS}
    out["long"] = generate(e, "long", encode("a long answer"), 48, 0.0, 0)
    return out


def eventually(cond, within=30.0, what="the condition"):
    end = time.monotonic() + within
    while not cond():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.02)


def served(reference, route, within=60):
    """A router on route (first stage first) serves every request of REQS as the reference
    generates it. Returns the router's client, still open."""
    c = RouterClient(route[0], route[-1])
    submit_all(c, route=route)
    assert c.wait([r[0] for r in REQS], within) == {r[0]: reference[r[0]] for r in REQS}
    return c


def connect(addr, role="router", stage=0):
    """A connection to a worker started in a thread (it may not listen yet), past its hello."""
    end = time.monotonic() + 30
    while True:
        try:
            c = frame.Conn.connect(addr)
            break
        except OSError:
            assert time.monotonic() < end, f"{addr} never listened"
            time.sleep(0.02)
    c.handshake(role, "default", stage)
    return c


class BlackHole:
    """A stage that says hello and swallows every frame: a step sent to it never comes back."""

    def __init__(self):
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(8)
        self.addr = f"127.0.0.1:{self.srv.getsockname()[1]}"
        self.frames = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                s, _ = self.srv.accept()
            except OSError:
                return
            threading.Thread(target=self._swallow, args=(frame.Conn(s),), daemon=True).start()

    def _swallow(self, c):
        try:
            frame.accept_hello(c, ("stage", "sampler"), "black hole")
            while True:
                c.recv()
                self.frames += 1
        except (OSError, frame.Closed, frame.FrameError):
            c.close()

    def close(self):
        self.srv.close()


def test_a_last_stage_told_the_old_first_stage_answers_the_new_one(reference):
    """Stage 1 was never told of the new first stage (its --next is the old one, still alive):
    the route in the submits brings every step back to the first stage that sent it, and a
    stale sampled at the old one is dropped without harm."""
    old0, old_addr = inproc("--stage", "0", "--depth", "2", "--layers", "0:2", "--replicate", "off")
    s1, s1_addr = inproc("--stage", "1", "--depth", "2", "--layers", "2:4", "--replicate", "off",
                         "--next", old_addr)
    new0, new_addr = inproc("--stage", "0", "--depth", "2", "--layers", "0:2", "--replicate", "off",
                            "--next", s1_addr)
    c = served(reference, [new_addr, s1_addr])
    assert old0.seq == 0, "the old first stage was sent nothing"
    c.close()

    # A sampled from another first stage's step reaches the old one: dropped, and it serves on.
    stray = connect(old_addr, "sampler", 1)
    stray.send({"op": "sampled", "origin": "someone-else", "seq": 1,
                "batch": [{"request": "g1", "step": 0, "run": 1, "token": 5}], "failed": []})
    c = served(reference, [old_addr, s1_addr])
    stray.close()
    c.close()


def test_a_lost_router_sets_requests_aside_and_its_resubmit_resumes_them(reference):
    """The router's connection to the first stage closes mid-generation: the request stops
    there (its KV kept); resubmitted with what was delivered it resumes from the kept caches
    and ends as one that never stopped."""
    w0, a0 = inproc("--stage", "0", "--depth", "2", "--layers", "0:2", "--replicate", "off")
    w1, a1 = inproc("--stage", "1", "--depth", "2", "--layers", "2:4", "--replicate", "off", "--next", a0)
    route = [a0, a1]
    c = RouterClient(a0, a1)
    c.submit("long", encode("a long answer"), 48, stop=[], route=route)
    c.wait_tokens("long", 4)
    c.submit_conn.close()
    eventually(lambda: "long" in w0.orphans and "long" not in w0.requests, what="the request set aside")
    assert w0.engine.pool.has("long"), "its KV cache is kept for the resubmit"
    time.sleep(0.2)  # a step in flight when it closed may still deliver one token
    delivered = c.wait_tokens("long", 1)
    c.close()

    c = RouterClient(a0, a1)
    c.submit("long", encode("a long answer"), 48, stop=[], route=route,
             resume_from=len(delivered), generated=delivered)
    got = c.wait(["long"], 60)["long"]
    assert delivered + got == reference["long"], "the steps from resume_from on, after those delivered"
    assert "long" not in w0.orphans
    c.close()


def test_a_step_that_never_returns_closes_the_routers_and_set_aside_caches_expire(reference):
    """The step goes to a stage that swallows it: after --step-timeout the first stage closes
    its router connections (a router then pauses and resubmits) and sets the request aside;
    no resubmit comes within --orphan-ttl, so its cache is freed; the first stage then serves
    a route that works."""
    hole = BlackHole()
    w0, a0 = inproc("--stage", "0", "--depth", "2", "--layers", "0:2", "--replicate", "off",
                    "--step-timeout", "0.5", "--orphan-ttl", "0.5")
    w1, a1 = inproc("--stage", "1", "--depth", "2", "--layers", "2:4", "--replicate", "off", "--next", a0)
    r = connect(a0)
    r.send({"op": "submit", "request": "lost", "prompt": encode("into the void"), "max_tokens": 8,
            "temperature": 0, "seed": 0, "route": [a0, hole.addr]})
    assert r.recv()[0]["op"] == "accepted"
    r.sock.settimeout(10)
    with pytest.raises((frame.Closed, ConnectionError)):  # not TimeoutError: closed by the worker
        r.recv()  # nothing else comes: the worker closes the connection after the step timeout
    assert hole.frames >= 1
    eventually(lambda: not w0.engine.pool.has("lost") and not w0.orphans, what="the set-aside cache freed")

    c = served(reference, [a0, a1])
    c.close()
    hole.close()


def test_a_new_route_gives_the_step_in_flight_up(reference):
    """The step in flight went to a successor that vanished without closing its connection (a
    machine gone): the router's submits along a new route free the first stage at once, long
    before the step timeout, and the old route's request waits, set aside, for its resubmit."""
    hole = BlackHole()
    w0, a0 = inproc("--stage", "0", "--depth", "2", "--layers", "0:2", "--replicate", "off")
    w1, a1 = inproc("--stage", "1", "--depth", "2", "--layers", "2:4", "--replicate", "off", "--next", a0)
    r = connect(a0)
    r.send({"op": "submit", "request": "stuck", "prompt": encode("into the void"), "max_tokens": 8,
            "temperature": 0, "seed": 0, "route": [a0, hole.addr]})
    assert r.recv()[0]["op"] == "accepted"
    eventually(lambda: hole.frames >= 1, what="the step sent to the vanished stage")

    c = served(reference, [a0, a1], within=20)
    assert "stuck" in w0.orphans and w0.engine.pool.has("stuck"), "set aside with its cache for a resubmit"
    c.close()
    r.close()
    hole.close()


def test_a_bad_route_is_refused():
    w0, a0 = inproc("--stage", "0", "--depth", "2", "--layers", "0:2", "--replicate", "off")
    r = connect(a0)
    for bad in (["only-one"], "a,b", [a0, ""], [a0, 7]):
        r.send({"op": "submit", "request": "x", "prompt": [1, 2], "max_tokens": 2, "route": bad})
        h, _ = r.recv()
        assert (h["op"], h["code"]) == ("error", "bad_request"), bad
        assert "route" in h["message"]
    r.close()
