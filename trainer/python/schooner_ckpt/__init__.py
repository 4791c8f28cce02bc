"""Python client of schooner's node checkpoint agent.

The core (Client, Entry) needs only the standard library: it talks to the agent over its Unix
socket and moves tensor bytes through shared memory. The PyTorch layer (save, load) imports
torch only when called, so the core works where torch is not installed.
"""

from .client import AgentError, Client, Entry, NO_LAYER, NoCheckpoint, Restored
from .default import default_client
from .env import Config, config_from_env
from . import rng
from .overlap import OverlappedSaver
from .torch_state import load, load_tensors, prepare, save

__all__ = [
    "AgentError",
    "Client",
    "Config",
    "Entry",
    "NO_LAYER",
    "NoCheckpoint",
    "OverlappedSaver",
    "Restored",
    "config_from_env",
    "default_client",
    "load",
    "load_tensors",
    "prepare",
    "rng",
    "save",
]
