"""The PyTorch layer: save and load nested state (model and optimizer state dicts) through the
agent. torch is imported on first use, so the rest of the package works without it.

Tensors are copied from wherever they live (GPU included) straight into the shared-memory
buffer; non-tensor leaves and the nesting go into a small JSON tree saved as a U8 tensor named
__tree__/rank-<rank> of no layer, which load uses to rebuild the nesting.
"""

import json
import re
from typing import Any, Callable, Dict, List, Optional, Tuple

from .client import NO_LAYER, Client, Entry, Restored, layout
from .default import default_client
from .tree import flatten, unflatten

TREE_PREFIX = "__tree__/rank-"
_TREE_VERSION = 1

# layers.12. / h.3. / blocks.7. / layer.0. anywhere in a dotted or slashed name.
_LAYER_RE = re.compile(r"(?:^|[./])(?:layers|layer|blocks|block|h)[./](\d+)(?:[./]|$)")

def default_layer_of(name: str) -> Optional[int]:
    """The transformer layer a parameter name points at (model.layers.12.mlp.weight → 12), or
    None for tensors of no layer (embeddings, final norm, optimizer counters)."""
    m = _LAYER_RE.search(name)
    return int(m.group(1)) if m else None


def _torch():
    try:
        import torch
    except ImportError as e:
        raise ImportError("schooner_ckpt.save/load need PyTorch; the Client works without it") from e
    return torch


def _dtype_names(torch) -> Dict[Any, str]:
    return {
        torch.float64: "F64",
        torch.float32: "F32",
        torch.float16: "F16",
        torch.bfloat16: "BF16",
        torch.int64: "I64",
        torch.int32: "I32",
        torch.int16: "I16",
        torch.int8: "I8",
        torch.uint8: "U8",
        torch.bool: "BOOL",
    }


def _client(client: Optional[Client], rank: Optional[int], world: Optional[int], plan: Optional[Dict[str, Any]]) -> Client:
    return client if client is not None else default_client(rank, world, plan)


def _fill(entry: Entry, buf, offset: int) -> None:
    """Copies a tensor (on any device) into the shared-memory buffer without a staging copy."""
    data = entry.data
    n = entry.nbytes
    if isinstance(data, (bytes, bytearray, memoryview)):
        buf[offset : offset + n] = data
        return
    torch = _torch()
    src = data.detach()
    if not src.is_contiguous():
        src = src.contiguous()
    src = src.reshape(-1).view(torch.uint8)
    dst = torch.frombuffer(buf, dtype=torch.uint8, count=n, offset=offset)
    dst.copy_(src)
    del dst  # release the buffer export before the buffer may be closed


def _entries(state: Any, c: Client, prefix: Optional[str], layer_of: Optional[Callable[[str], Optional[int]]]) -> List[Entry]:
    """The entries a save of state writes: its tensors, named by path after prefix, and the
    JSON tree of everything else as the rank's __tree__ entry."""
    torch = _torch()
    if c.rank is None:
        raise RuntimeError("save through a client that has not said hello")
    r = c.rank
    if prefix is None:
        prefix = "" if (c.world or 1) <= 1 else f"rank-{r}/"
    layer_of = layer_of or default_layer_of
    tree, tensors = flatten(state, torch.is_tensor, prefix)
    names = _dtype_names(torch)
    entries = []
    for name, t in tensors:
        if t.dtype not in names:
            raise TypeError(f"tensor {name}: dtype {t.dtype} cannot be checkpointed (want one of {', '.join(str(d) for d in names)})")
        if t.layout != torch.strided:
            raise TypeError(f"tensor {name}: only dense tensors can be checkpointed, not {t.layout}")
        layer = layer_of(name)
        entries.append(Entry(name, NO_LAYER if layer is None else int(layer), names[t.dtype], tuple(t.shape), t))
    blob = json.dumps({"version": _TREE_VERSION, "tree": tree}, separators=(",", ":")).encode()
    entries.append(Entry(f"{TREE_PREFIX}{r}", NO_LAYER, "U8", (len(blob),), blob))
    return entries


def save(
    state: Any,
    step: int,
    layer_of: Optional[Callable[[str], Optional[int]]] = None,
    extra: Optional[Dict[str, str]] = None,
    emergency: bool = False,
    prefix: Optional[str] = None,
    client: Optional[Client] = None,
    rank: Optional[int] = None,
    world: Optional[int] = None,
    plan: Optional[Dict[str, Any]] = None,
) -> bool:
    """Saves nested state for step and returns once the bytes are in the agent's hands (the
    training step may then change the tensors); says whether it was an emergency save.

    layer_of maps a tensor's name to its model layer (default: the number after layers./h./
    blocks. in the name), so a restore under another pipeline split picks the right tensors.
    prefix starts every tensor name: by default "" in a world of one rank and "rank-<r>/"
    otherwise, so ranks never clash; give "" when names are globally meaningful and
    data-parallel replicas hold identical copies."""
    c = _client(client, rank, world, plan)
    entries = _entries(state, c, prefix, layer_of)
    return c.save(step, entries, extra=extra, emergency=emergency, fill=_fill)


def prepare(
    state: Any,
    prefix: Optional[str] = None,
    client: Optional[Client] = None,
    rank: Optional[int] = None,
    world: Optional[int] = None,
    plan: Optional[Dict[str, Any]] = None,
    slack: float = 0.05,
) -> int:
    """Readies the first save of state ahead of time: the client's shared-memory buffer and the
    agent's slots are allocated now for a shard of state's size (plus slack, for a state that
    grows a little, as an optimizer's does after its first step), not at the first save.
    Call it after building the model and optimizer; returns the bytes reserved."""
    c = _client(client, rank, world, plan)
    _, size = layout(_entries(state, c, prefix, None))
    size = int(size * (1 + slack)) + (1 << 20)
    c.reserve(size)
    return size


def _converter(map_location: Any) -> Callable[[Entry, Any, int], Any]:
    """Turns each restored entry into a tensor on map_location. The restore file is mapped
    privately (copy-on-write) into one storage that every host tensor views, so its bytes are
    read once, straight from the agent's memory: copying 17 GB into fresh memory tripled a
    restore's time. A tensor written to changes its own pages only; the mapping goes with the
    last tensor that views it (the file itself is unlinked once read)."""
    torch = _torch()
    by_name = {v: k for k, v in _dtype_names(torch).items()}

    def map_file(path: str, size: int):
        storage = torch.UntypedStorage.from_file(path, False, size)
        return torch.empty(0, dtype=torch.uint8).set_(storage, 0, (size,))

    def convert(entry: Entry, whole, offset: int) -> Any:
        n = entry.nbytes
        if entry.name.startswith(TREE_PREFIX):
            return bytes(whole[offset : offset + n].tolist()) if n else b""
        dtype = by_name[entry.dtype]
        if n == 0:
            return torch.empty(entry.shape, dtype=dtype, device=map_location)
        t = whole[offset : offset + n].view(dtype).reshape(entry.shape)
        return t if map_location is None else t.to(map_location)

    convert.map_file = map_file
    return convert


def load(
    step: int = -1,
    map_location: Any = "cpu",
    client: Optional[Client] = None,
    rank: Optional[int] = None,
    world: Optional[int] = None,
    plan: Optional[Dict[str, Any]] = None,
    return_meta: bool = False,
):
    """Restores what this rank saved at step (-1: the newest durable step) as the nested state
    save was given, tensors on map_location. With return_meta, returns (state, Restored) where
    Restored carries the step, plan and extra values (its entries emptied)."""
    c = _client(client, rank, world, plan)
    r = c.rank if rank is None else rank
    restored = c.load(step, rank=rank, convert=_converter(map_location))
    tensors = {e.name: e.data for e in restored.entries}
    blob = tensors.pop(f"{TREE_PREFIX}{r}", None)
    if blob is None:
        raise KeyError(f"step {restored.step} has no {TREE_PREFIX}{r}: it was not saved by schooner_ckpt.save")
    doc = json.loads(blob)
    if doc.get("version") != _TREE_VERSION:
        raise ValueError(f"checkpoint tree version {doc.get('version')} is not supported")
    state = unflatten(doc["tree"], tensors)
    if return_meta:
        restored.entries = []
        return state, restored
    return state


def load_tensors(
    step: int = -1,
    stage: Optional[int] = None,
    layers: Optional[Tuple[int, int]] = None,
    all: bool = False,
    plan: Optional[Dict[str, Any]] = None,
    map_location: Any = "cpu",
    client: Optional[Client] = None,
) -> Tuple[Dict[str, Any], Restored]:
    """Restores flat tensors by pipeline stage, layer range or all, for resharding: a
    checkpoint taken under one split loads under another by name and layer. Returns the
    tensors by name (the __tree__ entries left out) and the restore's metadata."""
    c = _client(client, None, None, plan)
    restored = c.load(step, stage=stage, plan=plan, layers=layers, all=all, convert=_converter(map_location))
    tensors = {e.name: e.data for e in restored.entries if not e.name.startswith(TREE_PREFIX)}
    restored.entries = []
    return tensors, restored
