"""The study's workloads. Each is built once on a device and then run unit by unit: `run()`
enqueues one unit (a latency-critical request, or a best-effort step) on the current stream and
`units` is the work one unit does in the workload's unit (TFLOP, GB, steps). Weights come from a
seeded generator, so every process builds the same workload."""

from __future__ import annotations

import torch

# name -> side, unit (the contract's, package interference)
SIDES = {"decode-chain": ("latency-critical", ""), "prefill-gemm": ("latency-critical", ""),
         "cnn-infer": ("latency-critical", ""), "gemm": ("best-effort", "TFLOP/s"),
         "copy": ("best-effort", "GB/s"), "train-step": ("best-effort", "steps/s")}

# Sizes per scale: h200 as the probe on the H200 (../shared/design/orion.md), tiny for CPU tests.
SCALES = {
    "h200": {"hidden": 8192, "chain": 16, "rows": 32, "prefill": 2048, "image": 224, "gemm": 8192,
             "copy_mib": 1024, "d_model": 1024, "seq": 512, "batch": 8},
    "tiny": {"hidden": 64, "chain": 4, "rows": 4, "prefill": 32, "image": 16, "gemm": 96,
             "copy_mib": 1, "d_model": 32, "seq": 8, "batch": 2},
}


class Workload:
    def __init__(self, name: str, run, units: float, unit: str):
        self.name, self.run, self.units, self.unit = name, run, units, unit


def build(name: str, device: torch.device, scale: str = "h200", seed: int = 0) -> Workload:
    if name not in SIDES:
        raise ValueError(f"workload {name!r} is not one of {', '.join(SIDES)}")
    s = SCALES[scale]
    g = torch.Generator(device="cpu").manual_seed(seed)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32

    def rand(*shape):
        return (torch.randn(*shape, generator=g) * 0.02).to(device=device, dtype=dtype)

    unit = SIDES[name][1]
    if name == "decode-chain":  # a decode step's matmuls: skinny activations through big weights
        ws = [rand(s["hidden"], s["hidden"]) for _ in range(s["chain"])]
        x = rand(s["rows"], s["hidden"])

        def run():
            y = x
            for w in ws:
                y = y @ w
            return y
        return Workload(name, run, 1, unit)
    if name == "prefill-gemm":
        w, x = rand(s["hidden"], s["hidden"]), rand(s["prefill"], s["hidden"])
        return Workload(name, lambda: x @ w, 1, unit)
    if name == "cnn-infer":
        net = torch.nn.Sequential(
            torch.nn.Conv2d(3, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(32, 64, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(64, 128, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(128, 1000))
        with torch.no_grad():
            for p in net.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 0.05)
        net = net.to(device=device, dtype=dtype).eval()
        img = rand(1, 3, s["image"], s["image"])

        def infer():
            with torch.no_grad():
                return net(img)
        return Workload(name, infer, 1, unit)
    if name == "gemm":
        n = s["gemm"]
        a, b = rand(n, n), rand(n, n)
        return Workload(name, lambda: a @ b, 2 * n ** 3 / 1e12, unit)
    if name == "copy":
        n = s["copy_mib"] << 20
        src = torch.empty(n, dtype=torch.uint8, device=device)
        dst = torch.empty_like(src)
        return Workload(name, lambda: dst.copy_(src), 2 * n / 1e9, unit)  # read and write
    # train-step: a transformer layer's forward, backward and optimizer step
    layer = torch.nn.TransformerEncoderLayer(s["d_model"], max(1, s["d_model"] // 64), 4 * s["d_model"],
                                             batch_first=True).to(device=device, dtype=dtype)
    opt = torch.optim.SGD(layer.parameters(), lr=1e-4)
    x = rand(s["batch"], s["seq"], s["d_model"])

    def step():
        opt.zero_grad(set_to_none=True)
        layer(x).float().square().mean().backward()
        opt.step()
    return Workload(name, step, 1, unit)
