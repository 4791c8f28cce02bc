"""Preloading a replacement's KV cache before it takes over (a migration on a preemption notice).

A stage migrated off a noticed machine used to restore each request from the holder only when
the router resumed it after the switch: every request's whole cache was fetched while its
client waited. The stage it replaces keeps decoding and replicating until the switch, so its
replacement can fetch each replica of its (deployment, stage) ahead of it — the holder's `list`
says which — and, at the switch, fetch only the steps decoded since (a get with `from_step`,
docs/serving-protocol.md section 3), placed from where the preload ended: the pause is the
delta, not the cache. Without the delta fetch a preload would be worse than none (the
replacement would decode the missing steps again, one pipeline step each), so
StageEngine.restore does it for every preloaded request.

The preload is bounded in time (a slow one must not hold a migration past its machine's
deadline: what is not preloaded when the time is up restores at the switch as before) and
skips what it cannot hold (a replica whose prompt is still arriving, a pool without room). A
preloaded request no restore takes up within its time to live (it finished before the switch)
gives its pages back; its replica stays with the holder, which its own stage drops.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from . import frame
from .kvpool import PoolFull


@dataclass
class Fetched:
    """What one fetch placed: positions [0, have) present, the replica's acked step (-1: none)
    and the last position any of its chunks reached (0: no chunk)."""
    have: int
    acked: int
    top: int


@dataclass
class Preloaded:
    """A request preloaded ahead of a switch: its prompt's tokens (step k's KV is position
    prompt + k - 1), and the monotonic time after which its pages are freed if no restore took
    it up."""
    prompt: int
    until: float

    def step_after(self, have: int) -> int:
        """The first step a get must ask for when positions [0, have) are present (0: the whole
        replica, when the prompt is not)."""
        return have - self.prompt + 1 if have >= self.prompt else 0


def list_held(addr: str, deployment: str, stage: int, timeout: float = 5.0) -> list[dict]:
    """The holder's `held` list for (deployment, stage): [{"request", "acked_step", "bytes"}]."""
    conn = frame.Conn.connect(addr, timeout=timeout)
    try:
        conn.sock.settimeout(timeout)  # a holder that does not answer must not hold the preload
        conn.handshake("reader", deployment, stage)
        conn.send({"op": "list"})
        h, _ = conn.recv()
        if h.get("op") != "held":
            raise frame.FrameError(f"holder answered list with {h.get('op')!r}: {h.get('message', '')}")
        return list(h.get("requests") or [])
    finally:
        conn.close()


def preload(engine, budget_s: float, ttl_s: float = 120.0, log=print) -> dict:
    """Fetch every complete replica the engine's holder keeps for its (deployment, stage) into
    its KV pool, for at most budget_s seconds (what is left restores at the switch). Returns
    counts: preloaded, skipped, positions, bytes (the fetched payload) and seconds."""
    t0 = time.monotonic()
    end = t0 + budget_s
    out = {"listed": 0, "preloaded": 0, "skipped": 0, "positions": 0, "bytes": 0, "s": 0.0, "timed_out": False}
    if not engine.holder or budget_s <= 0:
        return out
    try:
        held = list_held(engine.holder, engine.deployment, engine.stage, timeout=max(0.1, budget_s))
    except (OSError, frame.Closed, frame.FrameError) as e:
        log(f"schooner_serve: preload: listing {engine.holder}: {e}; restoring at the switch instead")
        return out
    out["listed"] = len(held)
    per_token = _token_bytes(engine)
    for h in held:
        rid, acked = h.get("request"), int(h.get("acked_step", -1))
        if time.monotonic() >= end:
            out["timed_out"] = True
            break
        if not rid or acked < 0 or engine.pool.has(rid):
            out["skipped"] += 1
            continue
        tokens = max(1, -(-int(h.get("bytes", 0)) // per_token))
        if _place_one(engine, rid, tokens, ttl_s, out, timeout=max(0.05, end - time.monotonic())):
            out["preloaded"] += 1
        else:
            out["skipped"] += 1
    out["s"] = round(time.monotonic() - t0, 6)
    log(f"schooner_serve: preloaded {out['preloaded']} of {out['listed']} replicas ({out['positions']} positions, "
        f"{out['bytes']} bytes) in {out['s']:.3f} s" + (" (time up: the rest restore at the switch)"
                                                         if out["timed_out"] else ""))
    return out


def _token_bytes(engine) -> int:
    """A position's bytes in a replica of this stage: K and V of every local layer."""
    c = engine.c
    esize = engine.pool.kv.element_size()
    return max(1, (engine.end - engine.first) * 2 * c.kv_heads * c.head_dim * esize)


def _place_one(engine, rid: str, tokens: int, ttl_s: float, out: dict, timeout: float | None = None) -> bool:
    """Fetch one replica of about `tokens` positions into fresh pages; False (pages given back,
    the holder's replica untouched) when it does not fit or is not usable. timeout bounds each
    wait for the holder: one that stops answering mid-fetch must not hold the preload past its
    time (the request then restores at the switch)."""
    try:
        engine.pool.allocate(rid, tokens + 1)
    except PoolFull:
        return False
    try:
        got = engine.fetch_into_pool(rid, tokens, wait_ms=0, timeout=timeout)
    except Exception as e:  # noqa: BLE001 — this request restores at the switch instead
        print(f"schooner_serve: preload of {rid}: {e}", flush=True)
        got = None
    prompt = got.top - got.acked if got is not None and got.acked >= 0 else -1
    if got is None or prompt <= 0 or got.have < prompt:
        engine.pool.release(rid)  # not engine.release: the replica is the running stage's
        return False
    engine.preloaded[rid] = Preloaded(prompt, time.monotonic() + ttl_s)
    out["positions"] += got.have
    out["bytes"] += engine.restore_stats[-1]["bytes"] if engine.restore_stats else 0
    return True


def expire(engine, now: float | None = None) -> list[str]:
    """Give back the pages of preloaded requests no restore took up in time (they finished
    before the switch, or were never resumed here); the holder's replicas are left alone."""
    now = time.monotonic() if now is None else now
    gone = [rid for rid, p in engine.preloaded.items() if now >= p.until]
    for rid in gone:
        del engine.preloaded[rid]
        engine.pool.release(rid)
        engine.params.pop(rid, None)
    return gone


def next_expiry(engine) -> float | None:
    """When the next preloaded request expires (monotonic), None when none is preloaded."""
    return min((p.until for p in engine.preloaded.values()), default=None)
