"""A minimal router-side client (for tests, benchmarks and poking a worker by hand): connects with
role router, submits, collects token/done/error frames per request."""

from __future__ import annotations

import threading
import time

from . import frame


class RouterClient:
    def __init__(self, submit_addr: str, tokens_addr: str | None = None, deployment: str = "default",
                 timeout: float = 30.0):
        self.cv = threading.Condition()
        self.tokens: dict[str, dict[int, int]] = {}
        self.done: dict[str, dict] = {}
        self.errors: list[dict] = []
        self.replies: list[dict] = []
        self.submit_conn = self._open(submit_addr, deployment, timeout)
        self.token_conn = self.submit_conn
        if tokens_addr and tokens_addr != submit_addr:
            self.token_conn = self._open(tokens_addr, deployment, timeout)

    def _open(self, addr, deployment, timeout):
        end = time.monotonic() + timeout
        while True:
            try:
                c = frame.Conn.connect(addr)
                break
            except OSError:
                if time.monotonic() > end:
                    raise
                time.sleep(0.05)
        c.handshake("router", deployment, 0)
        threading.Thread(target=self._read, args=(c,), daemon=True).start()
        return c

    def _read(self, c):
        try:
            while True:
                h, _ = c.recv()
                with self.cv:
                    if h["op"] == "token":
                        self.tokens.setdefault(h["request"], {})[h["step"]] = h["token"]
                    elif h["op"] == "done":
                        self.done[h["request"]] = h
                    elif h["op"] == "error":
                        self.errors.append(h)
                        if "request" in h and h.get("code") not in ("overloaded", "bad_request"):
                            self.done.setdefault(h["request"], h)
                        self.replies.append(h)
                    else:
                        self.replies.append(h)
                    self.cv.notify_all()
        except (OSError, frame.Closed, frame.FrameError):
            with self.cv:
                self.replies.append({"op": "closed"})
                self.cv.notify_all()

    def submit(self, request: str, prompt, max_tokens: int, temperature: float = 0.0, seed: int = 0,
               **extra) -> None:
        h = {"op": "submit", "request": request, "prompt": list(prompt), "max_tokens": max_tokens,
             "temperature": temperature, "seed": seed, **extra}
        self.submit_conn.send(h)

    def wait(self, requests, timeout: float = 30.0) -> dict[str, list[int]]:
        """The tokens of each request once its done (or error) came, in step order."""
        end = time.monotonic() + timeout
        with self.cv:
            while not all(r in self.done for r in requests):
                left = end - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"not done: {[r for r in requests if r not in self.done]}")
                self.cv.wait(left)
            return {r: [t for _, t in sorted(self.tokens.get(r, {}).items())] for r in requests}

    def wait_tokens(self, request: str, n: int, timeout: float = 30.0) -> list[int]:
        end = time.monotonic() + timeout
        with self.cv:
            while len(self.tokens.get(request, {})) < n and request not in self.done:
                left = end - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{request}: {len(self.tokens.get(request, {}))} of {n} tokens")
                self.cv.wait(left)
            return [t for _, t in sorted(self.tokens.get(request, {}).items())]

    def ping(self, timeout: float = 10.0) -> dict:
        with self.cv:
            n = len(self.replies)
        self.submit_conn.send({"op": "ping"})
        end = time.monotonic() + timeout
        with self.cv:
            while True:
                for h in self.replies[n:]:
                    if h["op"] == "pong":
                        return h
                left = end - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no pong")
                self.cv.wait(left)

    def close(self):
        for c in {id(self.submit_conn): self.submit_conn, id(self.token_conn): self.token_conn}.values():
            c.close()
