"""The best-effort side's half of the colocation runtime (docs/colocation.md).

The launch shim (gpu/colocate/shim) gates kernels, but it cannot make a kernel shorter, and a
best-effort GEMM of several milliseconds makes a latency-critical kernel that arrives behind it
wait that long (the H200's GEMMs run persistent thread blocks that stream priority never
preempts). split.py cuts the best-effort program's large matrix products, forward and backward,
into row blocks that each run about as long as the runtime's current budget. boot/ holds the
sitecustomize that switches it on in an unmodified Python program the runtime starts.
"""
