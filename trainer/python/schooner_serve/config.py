"""Model configurations by name, and the byte-level tokenizer's ids."""

from __future__ import annotations

import argparse
import dataclasses

# The byte-level tokenizer: ids 0..255 are the bytes, then a few specials; vocabularies of the
# larger configs are wider (the extra ids are never produced by encode, only by the model).
BOS, EOS = 256, 257
BYTE_VOCAB = 260  # 256 bytes + <bos> + <eos> + 2 reserved


def encode(text: str) -> list[int]:
    return [BOS] + list(text.encode("utf-8"))


def decode(ids) -> str:
    return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    tied: bool = False
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    max_seq: int = 8192
    eos: int | None = EOS

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def check(self) -> None:
        if self.hidden % self.heads or self.heads % self.kv_heads or self.head_dim % 2:
            raise ValueError(f"{self.name}: hidden {self.hidden}, heads {self.heads}, kv_heads "
                             f"{self.kv_heads} do not split evenly (head_dim must be even)")

    def params(self) -> int:
        h, hd = self.hidden, self.head_dim
        block = h * hd * (2 * self.heads + 2 * self.kv_heads) + 3 * h * self.ffn + 2 * h
        return self.layers * block + self.vocab * h * (1 if self.tied else 2) + h

    def kv_bytes_per_token(self, dtype_size: int, layers: int | None = None) -> int:
        return 2 * (layers if layers is not None else self.layers) * self.kv_heads * self.head_dim * dtype_size

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


CONFIGS = {
    # CPU tests: ~0.2 M parameters.
    "tiny": ModelConfig("tiny", layers=4, hidden=64, heads=4, kv_heads=2, ffn=176, vocab=BYTE_VOCAB),
    "small": ModelConfig("small", layers=8, hidden=512, heads=8, kv_heads=4, ffn=1408, vocab=32000),
    "1b": ModelConfig("1b", layers=16, hidden=2048, heads=32, kv_heads=8, ffn=8192, vocab=128256,
                      tied=True, rope_theta=500000.0),
    # Llama-2-7B-like shape with GQA (6.7 B parameters with 32000 vocab).
    "8b-v32k": ModelConfig("8b-v32k", layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=32000),
    # Llama-3-8B shape (8.0 B parameters).
    "8b": ModelConfig("8b", layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256,
                      rope_theta=500000.0),
}


def add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="tiny", help=f"configuration name: {', '.join(CONFIGS)}; "
                   "the explicit dimensions below override its fields")
    p.add_argument("--n-layers", type=int, default=None, help="decoder blocks (overrides the configuration's)")
    for f in ("hidden", "heads", "kv-heads", "ffn", "vocab"):
        p.add_argument(f"--{f}", type=int, default=None)
    p.add_argument("--tied", choices=("on", "off"), default=None, help="tie the embedding and the lm head")
    p.add_argument("--seed", type=int, default=7, help="model seed: every weight is drawn from (seed, layer)")


def config_from_args(a: argparse.Namespace) -> ModelConfig:
    if a.model not in CONFIGS:
        raise SystemExit(f"unknown model {a.model!r}; known: {', '.join(CONFIGS)}")
    c = CONFIGS[a.model]
    over = {k: getattr(a, k) for k in ("hidden", "heads", "kv_heads", "ffn", "vocab") if getattr(a, k, None) is not None}
    if getattr(a, "n_layers", None) is not None:
        over["layers"] = a.n_layers
    if a.tied is not None:
        over["tied"] = a.tied == "on"
    if over:
        c = dataclasses.replace(c, name=c.name + "-custom", **over)
    c.check()
    return c
