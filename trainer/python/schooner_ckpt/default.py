"""One client per (socket, rank) for the whole process, so a trainer can call save and load
without carrying a Client around."""

from typing import Any, Dict, Optional, Tuple

from .client import Client
from .env import config_from_env

_clients: Dict[Tuple[str, int], Client] = {}


def default_client(rank: Optional[int] = None, world: Optional[int] = None, plan: Optional[Dict[str, Any]] = None) -> Client:
    """The process's client for rank (from the environment when not given), connected and said
    hello once; a client whose connection broke is replaced."""
    cfg = config_from_env(None, rank, world, plan)
    key = (cfg.socket, cfg.rank)
    c = _clients.get(key)
    if c is None or c._broken is not None:
        c = Client(cfg.socket)
        c.hello(cfg.rank, cfg.world, cfg.plan)
        _clients[key] = c
    return c
