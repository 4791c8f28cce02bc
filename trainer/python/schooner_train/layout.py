"""Where this process sits in the plan, from the SCHOONER_* variables schooner sets.

One process per GPU: world = PP × DP × TP. A global rank r is TP rank r % TP of DP replica
(r // TP) % DP of pipeline stage r // (TP·DP), so a TP group is TP consecutive ranks (one
machine). The stages' layer ranges come from SCHOONER_PLAN_JSON (the assignment schooner
passes), else SCHOONER_STAGES ("0:13,13:26"), else an even split.
"""

from __future__ import annotations

import dataclasses
import json
import os


@dataclasses.dataclass(frozen=True)
class Layout:
    dp: int
    pp: int
    tp: int
    rank: int
    stages: tuple  # ((first, end), ...) planner layers, half-open
    micro_batch: int
    global_batch: int

    @property
    def world(self) -> int:
        return self.dp * self.pp * self.tp

    @property
    def tp_rank(self) -> int:
        return self.rank % self.tp

    @property
    def dp_rank(self) -> int:
        return (self.rank // self.tp) % self.dp

    @property
    def stage(self) -> int:
        return self.rank // (self.tp * self.dp)

    @property
    def microbatches(self) -> int:
        """Microbatches per pipeline and iteration: global batch / (micro batch × DP)."""
        return self.global_batch // (self.micro_batch * self.dp)

    def rank_of(self, stage: int, dp_rank: int, tp_rank: int) -> int:
        return stage * self.dp * self.tp + dp_rank * self.tp + tp_rank


def even_split(layers: int, pp: int) -> tuple:
    """Contiguous stages of planner layers, extra layers to later stages (as Sailor does)."""
    base, extra = divmod(layers, pp)
    out, first = [], 0
    for s in range(pp):
        n = base + (1 if s >= pp - extra else 0)
        out.append((first, first + n))
        first += n
    return tuple(out)


def _int(env, name, default):
    v = env.get(name, "")
    if v == "" or v == "0":
        return default
    try:
        return int(v)
    except ValueError as e:
        raise ValueError(f"{name}={v!r} is not an integer") from e


def from_env(planner_layers: int, env=None) -> Layout:
    """Reads the layout; torchrun's RANK and WORLD_SIZE must agree with PP × DP × TP."""
    env = os.environ if env is None else env
    dp, pp, tp = _int(env, "SCHOONER_DP", 1), _int(env, "SCHOONER_PP", 1), _int(env, "SCHOONER_TP", 1)
    rank = _int(env, "RANK", 0)
    world = _int(env, "WORLD_SIZE", 1)
    if world != dp * pp * tp:
        raise ValueError(f"WORLD_SIZE is {world} but SCHOONER_PP×DP×TP is {pp}×{dp}×{tp}={pp * dp * tp}")
    stages = None
    if env.get("SCHOONER_PLAN_JSON"):
        plan = json.loads(env["SCHOONER_PLAN_JSON"]).get("plan", {})
        stages = tuple((s["first"], s["end"]) for s in plan.get("stages", []))
    elif env.get("SCHOONER_STAGES"):
        stages = tuple(tuple(int(x) for x in part.split(":")) for part in env["SCHOONER_STAGES"].split(","))
    if not stages:
        stages = even_split(planner_layers, pp)
    if len(stages) != pp:
        raise ValueError(f"{len(stages)} stage layer ranges for PP={pp}")
    if stages[0][0] != 0 or stages[-1][1] != planner_layers or any(a[1] != b[0] for a, b in zip(stages, stages[1:])):
        raise ValueError(f"stages {stages} do not cover planner layers 0..{planner_layers - 1} contiguously")
    mbs, gbs = _int(env, "SCHOONER_MICRO_BATCH", 1), _int(env, "SCHOONER_GLOBAL_BATCH", 8)
    if gbs % (mbs * dp):
        raise ValueError(f"global batch {gbs} is not a multiple of micro batch {mbs} × DP {dp}")
    return Layout(dp=dp, pp=pp, tp=tp, rank=rank, stages=stages, micro_batch=mbs, global_batch=gbs)
