"""Times schooner_ckpt.save of a model-sized state through a running agent: how long the
training step is held (the copy into shared memory and the agent's copy into its staging) and
how long until the step is committed.

    SCHOONER_CKPT_SOCKET=/run/schooner/ckpt.sock python3 bench_save.py --gib 2 --device cuda
"""

import argparse
import time

import torch

import schooner_ckpt


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--gib", type=float, default=1.0, help="state size in GiB (bf16 tensors of 64 MiB)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--steps", type=int, default=4)
    args = p.parse_args()
    n = max(1, int(args.gib * 16))
    state = {f"layers.{i}.weight": torch.randn(4096, 8192, device=args.device).to(torch.bfloat16) for i in range(n)}
    size = sum(t.numel() * t.element_size() for t in state.values())
    c = schooner_ckpt.Client(timeout=600)
    first = max(c.hello(rank=0, world=1) + 1, 1)
    for step in range(first, first + args.steps):
        if args.device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        schooner_ckpt.save(state, step, client=c)
        t1 = time.perf_counter()
        c.wait(step)
        t2 = time.perf_counter()
        print(f"step {step}: {size / 2**30:.2f} GiB from {args.device}: training held {t1 - t0:.3f} s "
              f"({size / (t1 - t0) / 1e9:.2f} GB/s), committed after {t2 - t0:.3f} s")
    c.close()


if __name__ == "__main__":
    main()
