"""The decoder's dimensions and the planner's layer numbering."""

from __future__ import annotations

import argparse
import dataclasses


@dataclasses.dataclass(frozen=True)
class Arch:
    """A GPT-style decoder: `layers` transformer blocks between an embedding and a head.

    The planner numbers layers as Sailor does: 0 is the embedding, 1..layers the blocks,
    layers+1 the head (final norm, projection to the vocabulary and the loss).
    """

    name: str
    layers: int
    hidden: int
    heads: int
    ffn: int
    vocab: int
    seq_len: int

    @property
    def planner_layers(self) -> int:
        return self.layers + 2

    def check(self, tp: int = 1) -> None:
        for field in ("layers", "hidden", "heads", "ffn", "vocab", "seq_len"):
            if getattr(self, field) < 1:
                raise ValueError(f"{field} must be at least 1, got {getattr(self, field)}")
        if self.hidden % self.heads:
            raise ValueError(f"hidden {self.hidden} is not a multiple of heads {self.heads}")
        if self.heads % tp or self.ffn % tp:
            raise ValueError(f"tensor parallelism {tp} must divide heads {self.heads} and ffn {self.ffn}")

    def to_json(self) -> dict:
        return {"name": self.name, "layers": self.layers, "hidden": self.hidden, "heads": self.heads,
                "ffn": self.ffn, "vocab": self.vocab, "seq_len": self.seq_len, "tied_embeddings": False}


def add_arch_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", required=True, help="model name (the profile's name)")
    p.add_argument("--layers", type=int, required=True, help="transformer blocks")
    p.add_argument("--hidden", type=int, required=True)
    p.add_argument("--heads", type=int, required=True)
    p.add_argument("--ffn", type=int, required=True, help="MLP width")
    p.add_argument("--vocab", type=int, default=50272)
    p.add_argument("--seq-len", type=int, default=1024)


def arch_from_args(a: argparse.Namespace) -> Arch:
    return Arch(a.name, a.layers, a.hidden, a.heads, a.ffn, a.vocab, a.seq_len)


def int_list(s: str) -> list[int]:
    try:
        out = [int(x) for x in s.split(",") if x.strip()]
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {s!r}") from e
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"need positive integers, got {s!r}")
    return out
