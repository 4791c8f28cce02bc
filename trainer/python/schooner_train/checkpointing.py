"""How the reference trainer checkpoints: through schooner's agent (overlapped with the next
iteration, or blocking), or with one of the baselines a PyTorch user would pick (torch.save with
fsync, torch.distributed.checkpoint.async_save). Each method answers the loop the same way:
prepare once after the first step, before_update() before every optimizer step, save() at a
checkpoint step (returning the seconds the loop was held), last = the newest step the method has
made safe (in the agent's hands, or written), check_restore(state, step) the differences between
the trainer's state and a restore of its final checkpoint (before close()), close() at the end."""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import Any, Dict, List, Optional

import torch
import torch.distributed as dist

from schooner_ckpt import rng

from .verify import differences


class AgentCheckpoints:
    """Through the node's checkpoint agent. overlap=True copies beside the next iteration
    (schooner_ckpt.OverlappedSaver); False holds the loop for the copy (schooner_ckpt.save)."""

    def __init__(self, client, overlap: bool):
        import schooner_ckpt

        self.ckpt, self.client = schooner_ckpt, client
        # SCHOONER_CKPT_DEVICE_SNAPSHOT: auto (default), on or off (OverlappedSaver).
        snap = os.environ.get("SCHOONER_CKPT_DEVICE_SNAPSHOT", "auto")
        self.saver = schooner_ckpt.OverlappedSaver(client, prefix="", device_snapshot=snap) if overlap else None
        self.name = "agent" if overlap else "agent-blocking"
        self.last = -1

    def prepare(self, state) -> None:
        if self.saver is not None:
            self.saver.prepare(state)
        else:
            self.ckpt.prepare(state, client=self.client, prefix="")

    def before_update(self) -> None:
        if self.saver is not None:
            self.saver.before_update()

    def save(self, state, step: int, urgent: bool, final: bool) -> float:
        t0 = time.perf_counter()
        if self.saver is not None:
            if os.environ.get("SCHOONER_CKPT_PROFILE_SAVE") == str(step):
                # Where a save's host time goes: the profile of this one save on stderr.
                import cProfile
                import pstats

                prof = cProfile.Profile()
                prof.runcall(self.saver.start, state, step, emergency=urgent)
                pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
            else:
                self.saver.start(state, step, emergency=urgent)
            if urgent or final:
                self.saver.flush()
            self.last = max(self.last, self.saver.accepted)
        else:
            self.ckpt.save(state, step, client=self.client, prefix="", emergency=urgent)
            self.last = step
        if final:
            self.client.wait(step)
        return time.perf_counter() - t0

    def poll(self) -> None:
        if self.saver is not None:
            self.last = max(self.last, self.saver.accepted)

    def check_restore(self, state, step: int) -> List[str]:
        return differences(state, self.ckpt.load(step, client=self.client))

    def measures(self) -> Dict[str, Any]:
        if self.saver is None:
            return {}
        s = self.saver.stats
        return {"checkpoint_backpressure": s.backpressure_s, "checkpoint_handed_s": s.handed_s,
                "checkpoint_pinned": s.pinned, "checkpoint_bytes": s.bytes,
                "checkpoint_device_snapshot": s.device_snapshot}

    def close(self) -> None:
        if self.saver is not None:
            self.saver.close()
        self.client.close()


class TorchSaveCheckpoints:
    """torch.save of the whole state as a careful trainer does it: beside the last, fsync,
    rename over it. Holds the loop for all of it."""

    name = "torch.save"

    def __init__(self, directory: str, stage_index: int):
        self.path = os.path.join(directory, f"stage-{stage_index}.pt")
        self.last = -1

    def prepare(self, state) -> None:
        pass

    def before_update(self) -> None:
        pass

    def save(self, state, step: int, urgent: bool, final: bool) -> float:
        t0 = time.perf_counter()
        torch.save(state, self.path + ".tmp")
        with open(self.path + ".tmp", "rb+") as f:
            os.fsync(f.fileno())
        os.replace(self.path + ".tmp", self.path)
        self.last = step
        return time.perf_counter() - t0

    def check_restore(self, state, step: int) -> List[str]:
        return differences(state, torch.load(self.path, map_location="cpu"))

    def poll(self) -> None:
        pass

    def measures(self) -> Dict[str, Any]:
        return {}

    def close(self) -> None:
        pass


class AsyncSaveCheckpoints:
    """torch.distributed.checkpoint.async_save, as its documentation shows it: the state dict
    from get_state_dict, the previous save's future awaited before the next one starts, each
    step in its own directory (files fsynced by the file-system writer); the older directory
    is removed once its successor is complete. With no optimizer (--ckpt-state model) it saves
    the weights alone, as the other methods then do, so the table compares equal states. One
    process (world of one) only: the baseline of the checkpoint table."""

    name = "async_save"

    def __init__(self, directory: str, model, optimizer):
        try:
            import torch.distributed.checkpoint as dcp
            from torch.distributed.checkpoint.state_dict import get_model_state_dict, get_state_dict
        except ImportError as e:
            raise SystemExit(f"--async-save-dir needs torch.distributed.checkpoint with get_state_dict (torch >= 2.2): {e}")
        if not hasattr(dcp, "async_save"):
            raise SystemExit(f"--async-save-dir needs torch.distributed.checkpoint.async_save; torch {torch.__version__} has none")
        if dist.is_initialized():
            raise SystemExit("--async-save-dir is a one-process baseline; run it with a world of one")
        # async_save's collectives need a CPU backend even for one process.
        store = dist.HashStore()
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo", store=store, rank=0, world_size=1)
        self.dcp, self.get_state_dict, self.get_model_state_dict = dcp, get_state_dict, get_model_state_dict
        self.dir, self.model, self.optimizer = directory, model, optimizer
        self.future: Optional[Any] = None
        self.pending, self.done_dir = -1, None
        self.last = -1

    def prepare(self, state) -> None:
        pass

    def before_update(self) -> None:
        pass

    def _settle(self) -> None:
        if self.future is None:
            return
        self.future.result()
        self.future = None
        if self.done_dir is not None:
            shutil.rmtree(self.done_dir, ignore_errors=True)
        self.done_dir = os.path.join(self.dir, f"step-{self.pending}")
        self.last = self.pending

    def _state_dict(self, step: int) -> Dict[str, Any]:
        if self.optimizer is None:
            return {"model": self.get_model_state_dict(self.model), "iteration": step}
        model_sd, optim_sd = self.get_state_dict(self.model, self.optimizer)
        return {"model": model_sd, "optimizer": optim_sd, "iteration": step, "rng": rng.capture()}

    def save(self, state, step: int, urgent: bool, final: bool) -> float:
        t0 = time.perf_counter()
        self._settle()
        sd = self._state_dict(step)
        self.future = self.dcp.async_save(sd, checkpoint_id=os.path.join(self.dir, f"step-{step}"))
        self.pending = step
        if final:
            self._settle()
        return time.perf_counter() - t0

    def poll(self) -> None:
        if self.future is not None and self.future.done():
            self._settle()

    def check_restore(self, state, step: int) -> List[str]:
        """torch.distributed.checkpoint.load into a state dict of the live one's shapes (the
        names get_state_dict gives, not state's), every tensor first set to what the live one
        cannot hold (NaN, or its bits inverted), so a tensor the load leaves untouched fails
        the check instead of passing as a copy."""
        self._settle()
        live = self._state_dict(step)
        loaded = _poisoned(live)
        self.dcp.load(loaded, checkpoint_id=os.path.join(self.dir, f"step-{step}"))
        return differences(live, loaded)

    def measures(self) -> Dict[str, Any]:
        return {}

    def close(self) -> None:
        self._settle()
        dist.destroy_process_group()


def _poisoned(tree: Any) -> Any:
    """A copy of tree whose tensors hold what the originals do not: NaN where floating, each
    bit inverted otherwise. Other values are kept (the load replaces what it restores)."""
    if torch.is_tensor(tree):
        if tree.is_floating_point():
            return torch.full_like(tree, float("nan"))
        if tree.dtype == torch.bool:
            return ~tree.clone()
        return torch.bitwise_not(tree.clone())
    if isinstance(tree, dict):
        return {k: _poisoned(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_poisoned(v) for v in tree]
    return tree
