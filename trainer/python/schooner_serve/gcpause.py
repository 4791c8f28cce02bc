"""Python's garbage collector on the serving path: freezing what warm-up made, and timing pauses.

A serving process holds a few hundred thousand long-lived objects after start-up (the model's
modules and parameters, torch's and the decode graphs' state). Python's cyclic collector walks
every tracked object on each full (generation 2) collection, and its thresholds fire one every
so many allocations, so a step that happens to trigger one stalls for the whole walk: one slow
step lengthens a time-between-tokens gap of every request in flight. `freeze()` after warm-up
moves what exists then into the permanent generation, which collections skip; what requests
allocate afterwards is still collected. `Pauses` times collections by generation, so a bench can
tell a collector pause from a slow kernel.
"""

from __future__ import annotations

import gc
import time


def freeze() -> int:
    """Collect once, then move every surviving tracked object out of the collector's reach.
    Returns how many objects were frozen. Call after warm-up (weights loaded, graphs captured),
    before serving; calling it again freezes what was made since."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


class Pauses:
    """Collections while installed, by generation: how many and their time (gc.callbacks).
    install() and remove() bracket the measured part; summary() is JSON-ready."""

    def __init__(self):
        self.count = [0, 0, 0]
        self.total_s = [0.0, 0.0, 0.0]
        self.max_s = 0.0
        self.spans: list[tuple[float, float, int]] = []  # (start, seconds, generation) of the older generations'
        self._t = 0.0

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t = time.perf_counter()
            return
        d = time.perf_counter() - self._t
        g = info.get("generation", 2)
        self.count[g] += 1
        self.total_s[g] += d
        self.max_s = max(self.max_s, d)
        if g > 0 and len(self.spans) < 10000:
            self.spans.append((self._t, d, g))

    def install(self) -> "Pauses":
        gc.callbacks.append(self._callback)
        return self

    def remove(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def inside(self, start: float, end: float) -> bool:
        """Whether a generation 1 or 2 collection began in [start, end) (perf_counter seconds)."""
        return any(start <= t < end for t, _d, _g in self.spans)

    def summary(self) -> dict:
        return {"collections": {f"gen{g}": self.count[g] for g in range(3)},
                "ms": {f"gen{g}": round(1e3 * self.total_s[g], 3) for g in range(3)},
                "max_ms": round(1e3 * self.max_s, 3),
                "frozen_objects": gc.get_freeze_count()}
