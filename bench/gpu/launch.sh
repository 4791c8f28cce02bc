# Sourced by the trainer checks: `launch N CMD...` starts N ranks of CMD on this machine with
# the environment torch.distributed's env:// rendezvous reads (RANK, LOCAL_RANK, WORLD_SIZE,
# MASTER_ADDR, MASTER_PORT) and waits for all; it fails if any rank fails. It stands in for
# torchrun, whose launcher in Debian's torch 1.13 does not run under Python 3.11.
launch() {
  local n=$1; shift
  # A port the kernel says is free now (a random one collided with the test suite's own
  # listeners: "Address already in use" at the rendezvous).
  local port pids=() rc=0
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
  for ((r = 0; r < n; r++)); do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$@" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  return $rc
}
