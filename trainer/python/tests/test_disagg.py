"""Prompt–token disaggregation on CPU with the tiny model (f32): a prompt engine prefills and
streams each layer's KV to the holder, a token engine restores it and decodes; every token must
equal a colocated engine's. Against the FakeHolder and, with SCHOONER_BIN, the Go holder."""

import threading
import time
import uuid

import pytest

torch = pytest.importorskip("torch")

from schooner_serve.disagg import Handoff, PromptEngine, TokenEngine  # noqa: E402
from schooner_serve.engine import StageEngine  # noqa: E402
from schooner_serve.fake_holder import FakeHolder  # noqa: E402

from .test_serve import REQS, SEED, TINY, holder_kind, make_holder, reference  # noqa: E402,F401


def engines(addr: str, wait_s: float = 5.0):
    """A prompt engine and a token engine on one holder, one deployment of their own."""
    dep = "disagg-" + uuid.uuid4().hex[:8]
    p = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=addr, deployment=dep)
    t = StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=addr, deployment=dep, restore_wait_s=wait_s)
    return PromptEngine(p), TokenEngine(t), dep


def as_requests(reqs=REQS):
    return [{"request": rid, "prompt": p, "max_tokens": n, "temperature": t, "seed": s, "stop": []}
            for rid, p, n, t, s in reqs]


def eventually(cond, timeout=10.0) -> bool:
    """Whether cond() holds within timeout (a drop is answered after the writer's flush)."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


def decode_all(token: TokenEngine, out: dict) -> None:
    while len(token.running):
        for rid, _k, tok, _done in token.step():
            out[rid].append(tok)


def test_a_token_engine_continues_what_a_prompt_engine_prefilled_with_the_colocated_tokens(reference, holder_kind):
    h = make_holder(holder_kind)
    try:
        prompt, token, dep = engines(h.addr)
        handoffs = prompt.prefill(as_requests())
        out = {x.request: [x.first] for x in handoffs}
        for x in handoffs:
            assert token.admit(Handoff.from_json(x.to_json()))  # as it travels between processes
        assert token.restored == len(REQS) and token.recomputed == 0
        assert not prompt.engine.pool.tables, "the prompt engine keeps no pages of a handed-off request"

        # The token engine's steps continue the replica the prompt engine began.
        for _ in range(3):
            for rid, _k, tok, _done in token.step():
                out[rid].append(tok)
        assert token.engine.writer.flush(30)
        assert h.acked_step("g1", deployment=dep) == 3

        decode_all(token, out)
        assert out == reference
        assert token.engine.writer.flush(30)
        assert eventually(lambda: all(h.acked_step(rid, deployment=dep) == -1 for rid in out)), \
            "finished requests' replicas are dropped"
    finally:
        h.close()


def test_a_token_engine_given_the_request_before_its_prefill_waits_for_the_prompt(reference, holder_kind):
    """The router may assign both engines at once: the token engine's get reaches the holder
    before the prompt engine has sent a byte, and is held ("expect") until the prompt is whole."""
    h = make_holder(holder_kind)
    try:
        prompt, token, _ = engines(h.addr)
        req = as_requests()[0]
        early = Handoff(req["request"], req["prompt"], reference[req["request"]][0], req["max_tokens"])

        def later():
            time.sleep(0.3)  # longer than the holder's writer-idle window: nobody is sending
            prompt.prefill([req])

        th = threading.Thread(target=later)
        th.start()
        assert token.admit(early)
        th.join()
        assert token.restored == 1 and token.recomputed == 0
        assert token.stats()["restore_ms"][0] >= 200, "the get was held until the prompt came"
        out = {early.request: [early.first]}
        decode_all(token, out)
        assert out[early.request] == reference[early.request]
    finally:
        h.close()


def test_a_prompt_the_holder_refused_is_recomputed_by_the_token_engine(reference):
    h = FakeHolder(budget=1024)  # too small for any prompt: refused as full
    try:
        prompt, token, _ = engines(h.addr, wait_s=0.2)
        handoffs = prompt.prefill(as_requests())
        out = {x.request: [x.first] for x in handoffs}
        for x in handoffs:
            assert token.admit(x)
        assert token.restored == 0 and token.recomputed == len(REQS)
        decode_all(token, out)
        assert out == reference
    finally:
        h.close()


def test_a_request_token_0_ends_is_not_handed_off(reference):
    h = FakeHolder()
    try:
        prompt, _, dep = engines(h.addr)
        rid, p, _, t, s = REQS[0]
        (x,) = prompt.prefill([{"request": rid, "prompt": p, "max_tokens": 1, "temperature": t, "seed": s}])
        assert x.first == reference[rid][0]
        assert eventually(lambda: h.acked_step(rid, deployment=dep) == -1), "its replica is dropped: nobody restores it"
    finally:
        h.close()


def test_over_the_holders_unix_socket_the_token_engine_restores_through_lent_memory(reference, tmp_path):
    """On one host the token engine reads the Go holder's unix socket: the prompt lands in the
    memory it lent (streamed, as a failover's restore), also for a get held for its prompt."""
    h = make_holder("go", socket_path=str(tmp_path / "kv.sock"))
    try:
        prompt, token, _ = engines(h.unix)
        assert token.engine.reader is not None, "the token engine lent the holder memory"
        reqs = as_requests()
        first = {rid: reference[rid][0] for rid in reference}
        early = Handoff(reqs[0]["request"], reqs[0]["prompt"], first[reqs[0]["request"]], reqs[0]["max_tokens"],
                        reqs[0]["temperature"], reqs[0]["seed"])

        def later():
            time.sleep(0.3)
            prompt.prefill(reqs)

        th = threading.Thread(target=later)
        th.start()
        assert token.admit(early)  # held at the holder until the prompt engine's prompt lands
        th.join()
        for x in reqs[1:]:
            assert token.admit(Handoff(x["request"], x["prompt"], first[x["request"]], x["max_tokens"],
                                       x["temperature"], x["seed"]))
        assert token.restored == len(REQS) and token.recomputed == 0
        assert all(s["lent"] and s["streamed"] for s in token.engine.restore_stats)
        out = {rid: [first[rid]] for rid in first}
        decode_all(token, out)
        assert out == reference
    finally:
        h.close()


def test_a_lost_token_engine_is_restored_from_the_prompt_engines_replica_and_its_own_steps(reference, holder_kind):
    """The replica a token engine continues is a stage's like any other: a second token engine
    restores a request mid-decode (the prompt engine's prompt, the first one's steps) and goes
    on with the colocated tokens, nothing recomputed."""
    h = make_holder(holder_kind)
    try:
        prompt, token, dep = engines(h.addr)
        (x,) = prompt.prefill(as_requests()[:1])
        out = [x.first]
        assert token.admit(x)
        for _ in range(4):
            out += [tok for _r, _k, tok, _d in token.step()]
        assert token.engine.writer.flush(30) and h.acked_step(x.request, deployment=dep) == 4
        token.engine.close()  # lost; its pages with it

        again = TokenEngine(StageEngine(TINY, SEED, 0, TINY.layers, kv_blocks=64, holder=h.addr, deployment=dep,
                                        restore_wait_s=5))
        p = len(x.prompt)
        params = {"temperature": x.temperature, "seed": x.seed, "max_tokens": x.max_tokens, "stop": [],
                  "reserve": p + x.max_tokens}
        assert again.engine.restore(x.request, p + len(out) - 1, params["reserve"], params) == p + len(out) - 1
        assert again.running.add(x.request, p, out)
        while len(again.running):
            out += [tok for _r, _k, tok, _d in again.step()]
        assert out == reference[x.request]
    finally:
        h.close()
