"""The sequential mechanism's lock (schooner_interfere.measure.FairLock) is granted in the order
it was asked for, so a latency-critical request is not starved by a best-effort loop that asks
again the moment it lets go."""
import threading
import unittest

from schooner_interfere.measure import FairLock


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


if __name__ == "__main__":
    unittest.main()
