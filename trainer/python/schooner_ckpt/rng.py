"""Random-number generator states as checkpointable values, so a restored run draws what the
uninterrupted one would have: dropout masks, data shuffles, sampled noise.

capture() returns a dict of tensors and plain values (what schooner_ckpt.save takes): torch's CPU
generator, every CUDA device's generator when CUDA is initialised, Python's random module, and
NumPy's legacy global generator when NumPy is installed. restore(d) puts them back. A data
loader's position is the trainer's own value (its iteration, the sampler's epoch and offset):
save it beside these in the same state.
"""
import random
from typing import Any, Dict


def capture() -> Dict[str, Any]:
    import torch

    out: Dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        out["cuda"] = list(torch.cuda.get_rng_state_all())
    version, internal, gauss = random.getstate()
    out["python"] = {"version": version, "state": torch.tensor(internal, dtype=torch.int64), "gauss": gauss}
    try:
        import numpy as np
    except ImportError:
        return out
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    out["numpy"] = {"kind": str(kind), "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                    "has_gauss": int(has_gauss), "cached": float(cached)}
    return out


def restore(d: Dict[str, Any]) -> None:
    """Puts back what capture returned (as saved and loaded: tensors may be on any device)."""
    import torch

    torch.set_rng_state(d["torch"].cpu().to(torch.uint8))
    if "cuda" in d and torch.cuda.is_available():
        states = [s.cpu().to(torch.uint8) for s in d["cuda"]]
        if len(states) != torch.cuda.device_count():
            raise ValueError(f"the checkpoint holds {len(states)} CUDA generators, this machine has {torch.cuda.device_count()} devices")
        torch.cuda.set_rng_state_all(states)
    p = d["python"]
    random.setstate((p["version"], tuple(int(x) for x in p["state"].tolist()), p["gauss"]))
    if "numpy" in d:
        import numpy as np

        n = d["numpy"]
        np.random.set_state((n["kind"], n["keys"].cpu().numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached"]))
