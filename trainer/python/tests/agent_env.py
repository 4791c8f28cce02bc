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
