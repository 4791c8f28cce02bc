"""Saves a known step for the Go side to read back (python_test.go): the cross-language check
that both clients lay tensors out the same way. Run as python3 -m tests.fixture_save."""

import array
import os

from schooner_ckpt import NO_LAYER, Client, Entry

STEP = 42


def main() -> None:
    with Client(os.environ["SCHOONER_CKPT_SOCKET"], timeout=60) as c:
        c.hello(rank=0, world=1, plan={"world": 1, "pp": 1, "dp": 1, "tp": 1, "note": "python fixture"})
        entries = [
            Entry("fixture.u8", NO_LAYER, "U8", (1000,), bytes(i % 251 for i in range(1000))),
            Entry("layers.2.f32", 2, "F32", (2, 3), array.array("f", [0.5, -1.0, 2.25, 3.0, 1e-3, -7.5])),
            Entry("layers.2.i64", 2, "I64", (2,), array.array("q", [-1, 1 << 40])),
        ]
        c.save(STEP, entries, extra={"from": "python"})
        print("saved", c.wait(STEP))


if __name__ == "__main__":
    main()
