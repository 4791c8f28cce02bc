"""The sequential mechanism's lock (schooner_interfere.measure.FairLock) is granted in the order
it was asked for, so a latency-critical request is not starved by a best-effort loop that asks
again the moment it lets go."""
import threading
import time
import unittest

import torch

from schooner_interfere.measure import FairLock, latency_run


class FairLockTest(unittest.TestCase):
    def test_a_waiter_goes_before_the_holder_asking_again(self):
        lock, order = FairLock(), []
        waiting = threading.Event()

        def request():
            waiting.set()
            with lock:
                order.append("request")

        with lock:  # the best-effort unit in progress
            t = threading.Thread(target=request)
            t.start()
            waiting.wait()
            # the request has its ticket once it waits on the condition: give it the moment
            while True:
                with lock._cv:
                    if lock._next == 2:
                        break
        with lock:  # the loop asks again at once: the waiting request goes first
            order.append("unit")
        t.join()
        self.assertEqual(order, ["request", "unit"])

    def test_many_threads_each_get_it_once_and_alone(self):
        lock, inside, seen = FairLock(), [], []

        def work(i):
            with lock:
                inside.append(i)
                self.assertEqual(len(inside), 1)
                seen.append(i)
                inside.pop()

        ts = [threading.Thread(target=work, args=(i,)) for i in range(16)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(sorted(seen), list(range(16)))

    def test_a_request_counts_its_wait_for_the_unit_in_progress(self):
        # A request that arrives while a best-effort unit holds the device waits for it, and
        # that wait is part of what the request's client sees.
        class Instant:
            def run(self):
                pass

        lock, hold = FairLock(), 0.05
        holding, release = threading.Event(), threading.Event()

        def unit():
            with lock:
                holding.set()
                release.wait()

        t = threading.Thread(target=unit)
        t.start()
        holding.wait()
        threading.Timer(hold, release.set).start()
        out = latency_run(Instant(), {"requests": 1, "warmup": 0, "think_ms": 0}, torch.device("cpu"), lock=lock)
        t.join()
        self.assertGreaterEqual(out["p50_ms"], hold * 1e3 * 0.9)


if __name__ == "__main__":
    unittest.main()
