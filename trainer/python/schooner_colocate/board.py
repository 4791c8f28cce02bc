"""Reads the runtime's current budget from the shared board the launch shim maps.

The board's layout is gpu/colocate/board.h (version 3): magic (8 bytes), version (4), SM count
(4), then budget_ns (8, little-endian signed) at offset 16. The version must move with the
header's SCH_BOARD_VERSION (a test reads the header): when it lagged, open() refused every real
board and the splitter cut to a fixed 100 µs instead of the supervisor's budget.
"""
import mmap
import os
import struct

MAGIC = 0x3130434F4C4F4353
VERSION = 3
BUDGET_OFFSET = 16


class Board:
    """The board at path, or None from open() when it is missing or not a board of this VERSION."""

    def __init__(self, mem):
        self._mem = mem

    @classmethod
    def open(cls, path):
        try:
            with open(path, "rb") as f:
                mem = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return None
        if len(mem) < BUDGET_OFFSET + 8:
            return None
        magic, version = struct.unpack_from("<QI", mem, 0)
        if magic != MAGIC or version != VERSION:
            return None
        return cls(mem)

    @classmethod
    def from_env(cls):
        path = os.environ.get("SCHOONER_COLOCATE_BOARD")
        return cls.open(path) if path else None

    def budget_s(self):
        """The budget on queued BE work, in seconds, as the supervisor last set it."""
        (ns,) = struct.unpack_from("<q", self._mem, BUDGET_OFFSET)
        return max(ns, 1) / 1e9
