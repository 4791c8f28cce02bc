"""Prompt–token disaggregation at the engine level (DéjàVu; issue 24, item 1): a prompt engine
prefills and a token engine decodes, and the prompt's KV cache goes from one to the other
through the KV-cache holder, on the replication and restore paths that failover already uses
(docs/serving-protocol.md section 3), with no protocol of its own.

* PromptEngine prefills a batch of requests on a replicating StageEngine: each layer's KV is put
  to the holder as soon as the layer has computed it (the put of the last layer completes the
  replica at step 0), so most of the transfer overlaps the rest of the prefill. It samples token
  0 and hands the request off (a Handoff: the request, its prompt, token 0, its sampling
  parameters) at once, without waiting for the holder's acks; its pages are freed, the replica
  stays with the holder.
* TokenEngine takes a Handoff by restoring the prompt's KV from the holder under the same
  (deployment, stage), with a waiting get that carries "expect": the holder holds the answer
  until the prompt is complete, whether or not the prompt engine's tail has left it yet. Its
  decode steps' put_steps then continue that same replica, so a token engine lost mid-request
  is restored like any stage. A prompt that does not arrive within the wait (the holder refused
  it as full, the prompt engine died) is recomputed on the token engine, and counted.

Both engines hold the same layers (the whole model, or the same stage of pipelines of the same
depth): the holder keys replicas by stage, so prompt and token pipelines of different depths
(DéjàVu's stream_out to the peers that take each layer) are not covered. Which token engine
takes a request, and how the Handoff travels (bench_disagg: a multiprocessing queue on one
machine), is the caller's. In a deployment the router assigns both pools and the worker plays
either role as each submit says (serving/router Options.Prefill; docs/serving-protocol.md
section 1, "Disaggregated pools"); these classes are the same roles for one process's use.
"""

from __future__ import annotations

import dataclasses

from .engine import StageEngine
from .running import Running, finished, params, prefill


@dataclasses.dataclass
class Handoff:
    """A request leaving the prompt engine: what a token engine needs to continue it."""
    request: str
    prompt: list[int]
    first: int  # token 0, sampled by the prompt engine
    max_tokens: int
    temperature: float = 0.0
    seed: int = 0
    stop: list[int] = dataclasses.field(default_factory=list)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Handoff":
        return cls(**d)

    def as_request(self) -> dict:
        return {"request": self.request, "prompt": self.prompt, "max_tokens": self.max_tokens,
                "temperature": self.temperature, "seed": self.seed, "stop": self.stop}


class PromptEngine:
    """The prompt role: prefill, stream the prompt's KV layer by layer, hand off."""

    def __init__(self, engine: StageEngine):
        if engine.writer is None:
            raise ValueError("a prompt engine streams its prompts to a KV-cache holder: give the engine a holder")
        if not (engine.is_first and engine.is_last):
            raise ValueError("a prompt engine samples token 0: it holds the whole model")
        self.engine = engine

    def prefill(self, reqs: list[dict]) -> list[Handoff]:
        """One prefill of the requests. Returns a Handoff for each, in order; a request that
        token 0 already ends (a stop token, max_tokens 1) has no token engine to go to: its
        Handoff is returned (it carries token 0) and its replica dropped."""
        firsts = prefill(self.engine, reqs, decode_room=False)
        out = []
        for r, t in zip(reqs, firsts):
            h = Handoff(r["request"], list(r["prompt"]), t, int(r["max_tokens"]), float(r.get("temperature", 0.0)),
                        int(r.get("seed", 0)), list(r.get("stop", ())))
            if finished(self.engine.params[r["request"]], [t]):
                self.engine.release(r["request"])
            else:
                self._hand_off(r["request"])
            out.append(h)
        return out

    def _hand_off(self, request: str) -> None:
        """Free the request's pages here but keep its replica: the token engine restores it."""
        self.engine.release(request, keep_replica=True)


class TokenEngine:
    """The token role: restore a handed-off request's prompt KV from the holder, then decode."""

    def __init__(self, engine: StageEngine, max_batch: int = 64):
        if engine.writer is None:
            # Its steps continue the replica the prompt engine began, and its release drops it:
            # without a writer the holder would keep every prompt for good.
            raise ValueError("a token engine restores prompts from a KV-cache holder and replicates to it: "
                             "give the engine a holder it reaches")
        if engine.restore_wait_ms <= 0:
            raise ValueError("a token engine waits for prompts still on their way: give the engine a restore wait")
        self.engine = engine
        self.running = Running(engine, max_batch)
        self.restored = self.recomputed = 0

    def admit(self, h: Handoff) -> bool:
        """Take the request over from its prompt engine: its prompt's KV restored from the holder
        (held there until complete), else recomputed here. Returns whether it decodes here (False
        when token 0 already ended it). RestoreFailed or PoolFull when the KV pool has no room."""
        p = params(h.as_request())
        if finished(p, [h.first]):
            return False  # the prompt engine ended it and dropped its replica
        have = self.engine.restore(h.request, len(h.prompt), p["reserve"], p, expect=True)
        if have >= len(h.prompt):
            self.restored += 1
        else:
            self._recompute(h)
        return self.running.add(h.request, len(h.prompt), [h.first])

    def _recompute(self, h: Handoff) -> None:
        """The prompt did not come: prefill it here (replicating as usual; whatever part of the
        replica the holder kept is dropped first). Token 0 stays the prompt engine's."""
        self.recomputed += 1
        e = self.engine
        e.pool.lengths[h.request] = 0
        if e.writer is not None:
            e.writer.drop(h.request)
        ents = [{"request": h.request, "step": 0, "positions": [0, len(h.prompt)]}]
        e.forward("prefill", ents, h.prompt)

    def step(self) -> list[tuple[str, int, int, bool]]:
        """One decode step of the running requests: (request, step k, token, done) each."""
        return self.running.step()

    def stats(self) -> dict:
        st = self.engine.restore_stats
        # Which path each restore took: the prompt straight from the holder's arena, the lent
        # memory, a memory file per get, or chunks over the socket (TCP).
        through = [("arena" if s["arena"] else "lent" if s["lent"] else "shm" if s["shm"] else "chunks") for s in st]
        return {"restored": self.restored, "recomputed": self.recomputed,
                "through": {k: through.count(k) for k in sorted(set(through))},
                "restore_ms": [round(1e3 * s["total_s"], 3) for s in st],
                "fetch_ms": [round(1e3 * s["fetch_s"], 3) for s in st]}
