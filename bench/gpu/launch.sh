# Sourced by the trainer checks: `launch N CMD...` starts N ranks of CMD on this machine with
# the environment torch.distributed's env:// rendezvous reads (RANK, LOCAL_RANK, WORLD_SIZE,
# MASTER_ADDR, MASTER_PORT) and waits for all; it fails if any rank fails. It stands in for
# torchrun, whose launcher in Debian's torch 1.13 does not run under Python 3.11.
launch() {
  local n=$1; shift
  local port=$((20000 + RANDOM % 20000)) pids=() rc=0
  for ((r = 0; r < n; r++)); do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$@" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  return $rc
}
