#!/usr/bin/env bash
# does a green context work in a fresh process, without MPS and as an MPS client?
cd trainer/python
P='import torch,sys
from schooner_serve import gpu_split
import contextlib
try:
    with contextlib.ExitStack() as st:
        print(gpu_split.enter_green(st, {"sms": 64}, "cuda"))
        g = torch.Generator(device="cuda"); x = torch.randn(1024, 1024, device="cuda", generator=g); print("ok", float((x@x).sum()) != 0)
except Exception as e:
    print("FAIL", repr(e)[:200])'
echo "== no MPS"; timeout 60 python3 -c "$P" 2>&1 | tail -3
D=$(mktemp -d); export CUDA_MPS_PIPE_DIRECTORY=$D/p CUDA_MPS_LOG_DIRECTORY=$D/l; mkdir -p $D/p $D/l
nvidia-cuda-mps-control -d
echo "== MPS client"; timeout 60 python3 -c "$P" 2>&1 | tail -3
echo "== MPS client, plain"; timeout 60 python3 -c 'import torch; x=torch.randn(8,device="cuda"); print("ok", x.sum().item()!=None)' 2>&1 | tail -2
echo quit | nvidia-cuda-mps-control
cat $D/l/*.log 2>/dev/null | tail -5
