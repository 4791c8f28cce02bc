"""A best-effort child stopped by a signal, as `schooner colocate run` stops a BE program, and
the timelines that let its rate be read over the latency-critical side's window."""
import json
import os
import signal
import subprocess
import sys
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class UntilSignalTest(unittest.TestCase):
    def test_sigterm_ends_the_loop_and_the_throughput_is_printed(self):
        env = dict(os.environ, PYTHONPATH=ROOT)
        p = subprocess.Popen([sys.executable, "-m", "schooner_interfere.child", "be", "--workload", "gemm", "--scale", "tiny",
                              "--device", "cpu", "--until-signal"], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, text=True)
        try:
            self.assertEqual(json.loads(p.stdout.readline()), {"ready": True}, "stdin at EOF must not stop it")
            p.send_signal(signal.SIGTERM)
            out = json.loads(p.stdout.readline())
            self.assertEqual(p.wait(timeout=30), 0)
        finally:
            p.kill()
        self.assertGreater(out["per_second"], 0)
        self.assertNotIn("marks", out, "marks only with --timeline")

    def test_timeline_marks_grow_and_span_the_run(self):
        env = dict(os.environ, PYTHONPATH=ROOT)
        p = subprocess.Popen([sys.executable, "-m", "schooner_interfere.child", "be", "--workload", "gemm", "--scale", "tiny",
                              "--device", "cpu", "--until-signal", "--timeline"], stdout=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, env=env, text=True)
        try:
            self.assertEqual(json.loads(p.stdout.readline()), {"ready": True})
            begun = time.time()
            time.sleep(0.5)
            p.send_signal(signal.SIGTERM)
            out = json.loads(p.stdout.readline())
            ended = time.time()
            self.assertEqual(p.wait(timeout=30), 0)
        finally:
            p.kill()
        marks = out["marks"]
        self.assertGreater(len(marks), 5, "one mark every 20 ms over half a second")
        times, work = [m[0] for m in marks], [m[1] for m in marks]
        self.assertEqual(times, sorted(times))
        self.assertEqual(work, sorted(work))
        self.assertEqual(work[0], 0)
        self.assertLessEqual(abs(times[0] - begun), 1.0)
        self.assertLessEqual(times[-1], ended)
        span = times[-1] - times[0]
        self.assertAlmostEqual(work[-1] / span, out["per_second"], delta=0.2 * out["per_second"])


class LatencyWindowTest(unittest.TestCase):
    def test_the_window_brackets_the_measured_requests(self):
        env = dict(os.environ, PYTHONPATH=ROOT)
        req = json.dumps({"requests": 20, "warmup": 5, "think_ms": 1, "seed": 1})
        before = time.time()
        out = json.loads(subprocess.run([sys.executable, "-m", "schooner_interfere.child", "lc", "--workload", "decode-chain",
                                         "--scale", "tiny", "--device", "cpu", "--timeline", "--request", req],
                                        capture_output=True, text=True, env=env, check=True, timeout=120).stdout)
        after = time.time()
        first, last = out["window_unix"]
        self.assertLess(before, first)
        self.assertLess(first, last)
        self.assertLess(last, after)
        self.assertGreaterEqual((last - first) * 1e3, 20 * out["p50_ms"] * 0.5, "twenty requests fit in the window")


if __name__ == "__main__":
    unittest.main()
