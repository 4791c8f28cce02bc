"""Timing one side of a run: a latency-critical side's requests (Poisson arrivals, each timed on
its own stream to completion) and a best-effort side's throughput (units finished per second
until told to stop)."""

from __future__ import annotations

import contextlib
import math
import random
import threading
import time

import torch


def _stream_ctx(stream):
    return torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()


def _wait(device: torch.device, stream) -> None:
    """Waits for this side's own work only: a device-wide sync would wait for the other side."""
    if device.type == "cuda":
        (stream if stream is not None else torch.cuda.current_stream(device)).synchronize()


class FairLock:
    """A lock granted in the order it was asked for: the "sequential" mechanism's one GPU at a
    time. With a plain threading.Lock the best-effort loop, which asks again the moment it lets
    go, took it back before a waiting request's thread woke: requests starved behind unit after
    unit, and the study's sequential step outran its time limit on the GPU. Here a request
    waits for at most the unit in progress."""

    def __init__(self):
        self._cv = threading.Condition()
        self._next = 0     # the ticket the next caller gets
        self._serving = 0  # the ticket that holds the lock

    def __enter__(self):
        with self._cv:
            ticket = self._next
            self._next += 1
            while ticket != self._serving:
                self._cv.wait()
        return self

    def __exit__(self, *exc):
        with self._cv:
            self._serving += 1
            self._cv.notify_all()
        return False


def percentile(sorted_ms, q: float) -> float:
    """Nearest-rank percentile of sorted values."""
    k = max(0, math.ceil(q / 100 * len(sorted_ms)) - 1)
    return sorted_ms[k]


def latency_run(w, req: dict, device: torch.device, stream=None, lock: threading.Lock | None = None,
                timeline: bool = False) -> dict:
    """req: requests, warmup, think_ms, seed. Each request waits an exponential think time, then
    runs one unit and waits for it; the warm-up requests are not counted. With timeline, the
    result also gives the measured requests' wall-clock window (window_unix: first start, last
    end), so a best-effort program in another process can be measured over the same window."""
    rng = random.Random(req.get("seed", 0))
    think = float(req.get("think_ms", 0))
    lat = []
    first = last = 0.0  # wall clock of the first measured request's start and the last one's end
    for i in range(int(req.get("warmup", 0)) + int(req["requests"])):
        if think > 0:
            time.sleep(rng.expovariate(1 / think) / 1000)
        # The request arrives now: under the sequential mechanism its wait for the best-effort
        # unit holding the device is part of its latency (timed inside the lock, that wait was
        # left out and the mechanism looked nearly free beside a GEMM loop).
        t0 = time.perf_counter()
        with lock if lock is not None else contextlib.nullcontext():
            with _stream_ctx(stream):
                w.run()
            _wait(device, stream)
            t1 = time.perf_counter()
        if i >= int(req.get("warmup", 0)):
            lat.append((t1 - t0) * 1e3)
            last = time.time()
            if not first:
                first = last - (t1 - t0)
    lat.sort()
    out = {"requests": len(lat), "p50_ms": percentile(lat, 50), "p99_ms": percentile(lat, 99),
           "mean_ms": sum(lat) / len(lat)}
    if timeline:
        out["window_unix"] = [round(first, 6), round(last, 6)]
    return out


# How often (seconds) a timeline marks the work done so far: fine enough to cut a window of a
# second or more out of it, coarse enough that a long run prints a few thousand marks.
MARK_EVERY = 0.02


class ThroughputLoop(threading.Thread):
    """Runs a best-effort workload unit after unit until stop() and reports units per second.
    `ready` is set after the warm-up units, when counting starts. With timeline, the result also
    gives marks: [wall-clock time, work done so far in the workload's unit], one every
    MARK_EVERY seconds and one at the end, so the rate over another process's window (the
    latency-critical side's requests) can be read from it: a whole-run rate mixes in the time
    that side was idle."""

    def __init__(self, w, device: torch.device, stream=None, lock: threading.Lock | None = None, warmup: int = 3,
                 timeline: bool = False):
        super().__init__(daemon=True)
        self.w, self.device, self.stream, self.lock, self.warmup = w, device, stream, lock, warmup
        self.timeline = timeline
        self.ready, self._halt, self.result, self.error = threading.Event(), threading.Event(), None, None

    def _unit(self):
        with self.lock if self.lock is not None else contextlib.nullcontext():
            with _stream_ctx(self.stream):
                self.w.run()
            _wait(self.device, self.stream)

    def run(self):
        try:
            for _ in range(self.warmup):
                self._unit()
            self.ready.set()
            n, t0 = 0, time.perf_counter()
            marks, next_mark = [[round(time.time(), 6), 0.0]], time.time() + MARK_EVERY
            while not self._halt.is_set():
                self._unit()
                n += 1
                if self.timeline and time.time() >= next_mark:
                    marks.append([round(time.time(), 6), n * self.w.units])
                    next_mark = marks[-1][0] + MARK_EVERY
            dt = time.perf_counter() - t0
            self.result = {"per_second": n * self.w.units / dt if dt > 0 else 0.0, "unit": self.w.unit}
            if self.timeline:
                marks.append([round(time.time(), 6), n * self.w.units])
                self.result["marks"] = marks
        except BaseException as e:  # noqa: BLE001 — reported to the caller
            self.error = e
            self.ready.set()

    def stop(self) -> dict:
        self._halt.set()
        self.join()
        if self.error is not None:
            raise RuntimeError(f"best-effort {self.w.name}: {self.error}") from self.error
        return self.result
