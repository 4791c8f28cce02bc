"""Nested training state (model and optimizer state dicts) as flat named tensors plus a small
JSON tree of everything else, so a checkpoint holds tensors only and restores the nesting.

Dict keys keep their type (optimizer state is keyed by int), lists and tuples stay what they
were, and non-tensor leaves (None, bool, int, float, str, bytes) live in the tree. Pure Python:
what counts as a tensor is the caller's predicate.
"""

import base64
from typing import Any, Callable, Dict, List, Tuple


def _key(k: Any) -> List[Any]:
    if isinstance(k, bool):
        return ["b", k]
    if isinstance(k, int):
        return ["i", k]
    if isinstance(k, float):
        return ["f", k]
    if isinstance(k, str):
        return ["s", k]
    if k is None:
        return ["n", None]
    raise TypeError(f"cannot checkpoint a dict key of type {type(k).__name__}: {k!r}")


def _unkey(k: List[Any]) -> Any:
    kind, v = k
    return {"b": bool, "i": int, "f": float, "s": str, "n": lambda _: None}[kind](v)


def flatten(obj: Any, is_tensor: Callable[[Any], bool], prefix: str = "") -> Tuple[Dict[str, Any], List[Tuple[str, Any]]]:
    """Returns the JSON tree of obj and its tensors as (name, tensor), named by their path
    ("model/layers.0.weight", "optimizer/state/3/exp_avg") after prefix."""
    tensors: List[Tuple[str, Any]] = []
    used = set()

    def name_of(path: List[str]) -> str:
        base = prefix + "/".join(path) if path else (prefix.rstrip("/") or "tensor")
        name, n = base, 1
        while name in used:
            n += 1
            name = f"{base}#{n}"
        used.add(name)
        return name

    def walk(x: Any, path: List[str]) -> Dict[str, Any]:
        if is_tensor(x):
            name = name_of(path)
            tensors.append((name, x))
            return {"tensor": name}
        if isinstance(x, dict):
            return {"dict": [[_key(k), walk(v, path + [str(k)])] for k, v in x.items()]}
        if isinstance(x, list):
            return {"list": [walk(v, path + [str(i)]) for i, v in enumerate(x)]}
        if isinstance(x, tuple):
            return {"tuple": [walk(v, path + [str(i)]) for i, v in enumerate(x)]}
        if x is None or isinstance(x, (bool, int, float, str)):
            return {"value": x}
        if isinstance(x, (bytes, bytearray)):
            return {"bytes": base64.b64encode(bytes(x)).decode()}
        where = "/".join(path) or "the top"
        raise TypeError(f"cannot checkpoint a {type(x).__name__} at {where}: only tensors, dicts, lists, tuples and plain values")

    return walk(obj, []), tensors


def unflatten(tree: Dict[str, Any], tensors: Dict[str, Any]) -> Any:
    """Rebuilds what flatten took apart; tensors maps each name in the tree to its tensor."""
    if "tensor" in tree:
        name = tree["tensor"]
        if name not in tensors:
            raise KeyError(f"the checkpoint's tree names tensor {name}, which the restore does not hold")
        return tensors[name]
    if "dict" in tree:
        return {_unkey(k): unflatten(v, tensors) for k, v in tree["dict"]}
    if "list" in tree:
        return [unflatten(v, tensors) for v in tree["list"]]
    if "tuple" in tree:
        return tuple(unflatten(v, tensors) for v in tree["tuple"])
    if "value" in tree:
        return tree["value"]
    if "bytes" in tree:
        return base64.b64decode(tree["bytes"])
    raise ValueError(f"unknown node in checkpoint tree: {sorted(tree)}")
