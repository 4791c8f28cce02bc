"""schooner_serve — the inference worker of schooner's DéjàVu-style serving data path.

One process per pipeline stage (``python3 -m schooner_serve.worker``) speaking the frames of
docs/serving-protocol.md: a Llama-style decoder with weights drawn from (seed, layer), a paged
KV pool, continuous batching, deterministic sampling and KV replication to a KV-cache holder,
from which a replacement stage restores a request's cache instead of recomputing it.
"""

VERSION = 1
