#!/usr/bin/env bash
# device calls 47 and 48 (issue 19), back to back on one warm H100 (GPU-36757349): the whole
# training state (17.0 GB) of the 1.42 B model every 10 iterations over 30, with the losses read
# after the optimizer step (call 42's fix), through the agent (47) and through
# torch.distributed.checkpoint.async_save (48), each beside no checkpoint in its own run.
export PYTHONUNBUFFERED=1
gunzip -c bin/schooner-agent.gz > bin/schooner-agent && chmod +x bin/schooner-agent
RESULTS=/tmp/res47/every10 CKPT_STATE=full CKPT_ITERATIONS=30 CKPT_EVERY=10 CKPT_METHODS="agent" \
  timeout 190 bash bench/gpu/run.sh checkpoint          # -> agent/
RESULTS=/tmp/res48/every10 CKPT_STATE=full CKPT_ITERATIONS=30 CKPT_EVERY=10 CKPT_METHODS="async" \
  timeout 145 bash bench/gpu/run.sh checkpoint          # -> async/
