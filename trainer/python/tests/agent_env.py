"""What the tests that need a running agent share: the agent's socket from
SCHOONER_CKPT_SOCKET (the Go test python_test.go starts one and sets it), and steps that only
grow across the whole run, since an engine never lets an older step replace a newer one."""

import itertools
import os
import unittest

SOCKET = os.environ.get("SCHOONER_CKPT_SOCKET", "")
_steps = itertools.count(1)


def next_step() -> int:
    return next(_steps)


def needs_agent(cls):
    return unittest.skipUnless(SOCKET, "SCHOONER_CKPT_SOCKET is not set: run through go test ./checkpoint/agent -run Python")(cls)


class OneRankTest(unittest.TestCase):
    """A test that talks to the running agent as the only rank of a one-rank plan: self.ckpt
    is the client module and self.client a client that has said hello, closed after the test."""

    def setUp(self):
        import schooner_ckpt

        self.ckpt = schooner_ckpt
        self.client = schooner_ckpt.Client(SOCKET, timeout=60)
        self.addCleanup(self.client.close)
        self.client.hello(rank=0, world=1, plan={"world": 1})
