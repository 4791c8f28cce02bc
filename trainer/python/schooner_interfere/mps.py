"""A private MPS control daemon: the interference study's mps-N rows and bench_disagg's mps and
green splits both run their processes under one, started for the run and shut down whatever
happens. Its pipe and log folders are its own (a temporary folder), so no other process on the
machine joins it, and a machine's own MPS setup is never touched (nor MIG)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

CONTROL = "nvidia-cuda-mps-control"


def unavailable() -> str:
    """Why no private MPS server can start on this machine ("" when one can)."""
    return f"{CONTROL} is not installed" if shutil.which(CONTROL) is None else ""


class MpsServer:
    """A private MPS control daemon for the life of a with-block: env() is what a client
    process needs in its environment to join it."""

    def __init__(self):
        self._dir = tempfile.TemporaryDirectory(prefix="schooner-mps-")
        self.pipe = os.path.join(self._dir.name, "pipe")
        self.log = os.path.join(self._dir.name, "log")

    def env(self) -> dict:
        return {"CUDA_MPS_PIPE_DIRECTORY": self.pipe, "CUDA_MPS_LOG_DIRECTORY": self.log}

    def _control(self, *args: str, stdin: str | None = None) -> None:
        subprocess.run([CONTROL, *args], input=stdin, text=True, env=dict(os.environ, **self.env()),
                       check=True, timeout=30)

    def __enter__(self) -> "MpsServer":
        os.makedirs(self.pipe)
        os.makedirs(self.log)
        try:
            self._control("-d")
        except BaseException:
            self._dir.cleanup()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self._control(stdin="quit\n")
        except Exception:
            # A run that failed says more than the daemon's quit failing after it: keep its
            # error; after a run that went well, a daemon that would not quit is the error.
            if exc_type is None:
                raise
        finally:
            self._dir.cleanup()
