"""Where a trainer finds its agent and its place in the job: environment variables set by the
node (SCHOONER_CKPT_SOCKET) and by whoever launched the rank (SCHOONER_RANK, SCHOONER_WORLD,
SCHOONER_PLAN), with torchrun's RANK and WORLD_SIZE as a fallback."""

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

DEFAULT_SOCKET = "/run/schooner/ckpt.sock"


@dataclass
class Config:
    """How to reach the agent and which rank this process is."""

    socket: str = DEFAULT_SOCKET
    rank: int = 0
    world: int = 1
    # The parallel layout (checkpoint.PlanInfo as JSON: world, pp, dp, tp, stages).
    plan: Dict[str, Any] = field(default_factory=dict)


def _int_env(names, default: int) -> int:
    for n in names:
        v = os.environ.get(n)
        if v not in (None, ""):
            try:
                return int(v)
            except ValueError as e:
                raise ValueError(f"{n}={v!r} is not an integer") from e
    return default


def config_from_env(
    socket: Optional[str] = None,
    rank: Optional[int] = None,
    world: Optional[int] = None,
    plan: Optional[Dict[str, Any]] = None,
) -> Config:
    """Fills what the caller did not give from the environment."""
    if plan is None:
        raw = os.environ.get("SCHOONER_PLAN", "")
        try:
            plan = json.loads(raw) if raw else {}
        except json.JSONDecodeError as e:
            raise ValueError(f"SCHOONER_PLAN is not JSON: {e}") from e
    if rank is None:
        rank = _int_env(["SCHOONER_RANK", "RANK"], 0)
    if world is None:
        world = _int_env(["SCHOONER_WORLD", "WORLD_SIZE"], int(plan.get("world") or 1))
    plan = dict(plan)
    plan.setdefault("world", world)
    return Config(
        socket=socket or os.environ.get("SCHOONER_CKPT_SOCKET") or DEFAULT_SOCKET,
        rank=rank,
        world=world,
        plan=plan,
    )
