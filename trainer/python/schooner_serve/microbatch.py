"""Decoding in microbatches, one microbatch a step, round robin, on one whole-model StageEngine:
the steady state of a pipeline of `count` stages (each stage computes one microbatch while the
others are on the other stages) as one engine sees it. A request's next token comes every
`count` steps, as in the pipeline; what a pipeline of that depth needs of one stage's GPU memory
(the KV of every microbatch in flight, or with swapping of about two) is what the engine's KV
pool is sized by (bench_swap.py).

With a swapping engine each step names the next microbatch as its prefetch, so that
microbatch's caches are swapped in while this one computes (swap.py). Requests are dicts as in
running.py.
"""

from __future__ import annotations

from .engine import StageEngine
from .running import finished, params


class Microbatches:
    def __init__(self, engine: StageEngine, count: int, size: int):
        if count < 1 or size < 1:
            raise ValueError("microbatches need a count and a size of at least 1")
        self.engine, self.count, self.size = engine, count, size
        self.groups: list[list[str]] = [[] for _ in range(count)]
        self.reqs: dict[str, tuple[int, list[int]]] = {}  # request -> (prompt length, generated)
        self.turn = 0

    def __len__(self) -> int:
        return len(self.reqs)

    def admit(self, reqs: list[dict]) -> list[list[dict]]:
        """Begin the requests (their KV reserved: in GPU pages, or swapping, in host memory;
        PoolFull when there is no room) and place them in the emptiest microbatches; returns
        the new requests per microbatch, to be prefilled a microbatch a step."""
        placed: list[list[dict]] = [[] for _ in range(self.count)]
        for r in reqs:
            i = min(range(self.count), key=lambda j: len(self.groups[j]) + len(placed[j]))
            if len(self.groups[i]) + len(placed[i]) >= self.size:
                raise ValueError(f"{self.count} microbatches of {self.size} are full")
            p = params(r)
            self.engine.begin(r["request"], p["reserve"], p)
            placed[i].append(r)
        return placed

    def prefill(self, group: int, reqs: list[dict]) -> list[int]:
        """Prefill new requests of microbatch `group` in one forward (prefetching the caches of
        the microbatch after it); returns each one's token 0. The requests decode from then on,
        unless token 0 ended them."""
        ents = [{"request": r["request"], "step": 0, "positions": [0, len(r["prompt"])]} for r in reqs]
        nxt = self._next(group)
        x = self.engine.forward("prefill", ents, [t for r in reqs for t in r["prompt"]],
                                prefetch=self._rows(nxt) if nxt != group else None)
        toks = self.engine.sample(ents, x)
        for r, t in zip(reqs, toks):
            if finished(self.engine.params[r["request"]], [t]):
                self.engine.release(r["request"])
            else:
                self.groups[group].append(r["request"])
                self.reqs[r["request"]] = (len(r["prompt"]), [t])
        return toks

    def _next(self, group: int) -> int:
        """The next microbatch with requests after `group` (group itself when it is the only one)."""
        for k in range(1, self.count + 1):
            j = (group + k) % self.count
            if self.groups[j]:
                return j
        return group

    def _rows(self, group: int) -> list[tuple[str, int]]:
        """The (request, positions) rows of microbatch `group`'s next decode step."""
        return [(r, self.reqs[r][0] + len(self.reqs[r][1])) for r in self.groups[group]]

    def step(self) -> list[tuple[str, int, int, bool]]:
        """One decode step of the microbatch whose turn it is; returns (request, step k, token,
        done) for each request in it."""
        if not self.reqs:
            return []
        g = self.turn if self.groups[self.turn] else self._next(self.turn)
        batch = [(r, self.reqs[r]) for r in self.groups[g]]
        nxt = self._next(g)
        ents = [{"request": r, "step": len(gen), "positions": [p + len(gen) - 1, p + len(gen)]}
                for r, (p, gen) in batch]
        x = self.engine.forward("decode", ents, [gen[-1] for _, (_, gen) in batch],
                                prefetch=self._rows(nxt) if nxt != g else None)
        toks = self.engine.sample(ents, x)
        out = []
        for (r, (_, gen)), t in zip(batch, toks):
            gen.append(t)
            done = finished(self.engine.params[r], gen)
            out.append((r, len(gen) - 1, t, done))
            if done:
                del self.reqs[r]
                self.groups[g].remove(r)
                self.engine.release(r)
        self.turn = (g + 1) % self.count
        return out
