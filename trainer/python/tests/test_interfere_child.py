"""A best-effort child stopped by a signal, as `schooner colocate run` stops a BE program."""
import json
import os
import signal
import subprocess
import sys
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


if __name__ == "__main__":
    unittest.main()
