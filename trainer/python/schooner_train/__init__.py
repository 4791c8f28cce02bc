"""schooner_train: the reference GPT-style decoder trainer of schooner and its profiler.

train    runs a plan from the SCHOONER_* variables (data, pipeline (1F1B) and tensor
         parallelism, micro-batches, global batch), prints the progress lines the node agent
         reads, and checkpoints and restores through the checkpoint agent (schooner_ckpt).
profile  measures per-layer forward, backward and update times (CUDA events, warm-up,
         median) and per-layer memory on this GPU and writes a planner model profile.

Weights are random (no downloads); every layer is initialised from (seed, layer index), so
the same model comes out of any parallel layout.
"""
