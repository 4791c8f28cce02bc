"""A continuous-batching loop's two kinds of step on one whole-model StageEngine, without the
worker's network protocol: a prefill of newly admitted requests, and one decode step of every
running request. The colocated engine and the two roles of disaggregation (disagg.py) are
built from the same two steps, so the disaggregated and colocated runs of bench_disagg differ
only in where the steps run and how the prompt's KV gets to the decoder.

Requests are dicts {"request", "prompt": [ids], "max_tokens", "temperature", "seed", "stop"}.
"""

from __future__ import annotations

from .engine import StageEngine


def params(req: dict) -> dict:
    """The engine's sampling parameters of a request (StageEngine.begin's `params`)."""
    return {"temperature": float(req.get("temperature", 0.0)), "seed": int(req.get("seed", 0)),
            "max_tokens": int(req["max_tokens"]), "stop": list(req.get("stop", ())),
            "reserve": len(req["prompt"]) + int(req["max_tokens"])}


def finished(p: dict, generated: list[int]) -> bool:
    """Whether a request with params p is done after its `generated` tokens."""
    return bool(generated) and (generated[-1] in p["stop"] or len(generated) >= p["max_tokens"])


def prefill(engine: StageEngine, reqs: list[dict], decode_room: bool = True) -> list[int]:
    """Begin the requests and prefill them in one forward; returns each one's token 0. Their KV
    room is reserved for prompt + max_tokens, or the prompt alone without decode_room (a prompt
    engine, which never decodes). A replicating engine streams each layer's KV to its holder as
    the layer finishes (StageEngine.forward)."""
    for r in reqs:
        p = params(r)
        engine.begin(r["request"], p["reserve"] if decode_room else len(r["prompt"]), p)
    ents = [{"request": r["request"], "step": 0, "positions": [0, len(r["prompt"])]} for r in reqs]
    return engine.sample(ents, engine.forward("prefill", ents, [t for r in reqs for t in r["prompt"]]))


class Running:
    """The requests decoding on an engine: each with its prompt length and the tokens so far.
    step() runs one decode step of all of them (at most max_batch, oldest first) and ends
    those that finished (their pages freed and, replicating, their replica dropped)."""

    def __init__(self, engine: StageEngine, max_batch: int = 64):
        self.engine, self.max_batch = engine, max_batch
        self.reqs: dict[str, tuple[int, list[int]]] = {}  # request -> (prompt length, generated)

    def __len__(self) -> int:
        return len(self.reqs)

    def add(self, request: str, prompt_len: int, generated: list[int]) -> bool:
        """Decode the request from here on (its KV of positions [0, prompt_len + len(generated)
        - 1) present in the engine); False, and it is released, when it is already done."""
        if finished(self.engine.params[request], generated):
            self.engine.release(request)
            return False
        self.reqs[request] = (prompt_len, list(generated))
        return True

    def step(self) -> list[tuple[str, int, int, bool]]:
        """One decode step; returns (request, step k, token, done) for each request in it."""
        batch = list(self.reqs.items())[: self.max_batch]
        if not batch:
            return []
        ents = [{"request": r, "step": len(g), "positions": [p + len(g) - 1, p + len(g)]} for r, (p, g) in batch]
        toks = self.engine.sample(ents, self.engine.forward("decode", ents, [g[-1] for _, (_, g) in batch]))
        out = []
        for (r, (_, g)), t in zip(batch, toks):
            g.append(t)
            done = finished(self.engine.params[r], g)
            out.append((r, len(g) - 1, t, done))
            if done:
                del self.reqs[r]
                self.engine.release(r)
        return out
