// Package colocation is the contract of running a best-effort (BE) GPU program beside a
// latency-critical (HP, "high priority") one on the same GPU, Orion-style: the admission
// parameters the runtime applies to every BE kernel, the kernel profiles it keys its decisions
// on, and the verdicts of the supervisor that throttles and evicts the BE side. It has no
// Temporal and no GPU code: the runtime (the C launch shim, the admission rule, the adaptive
// supervisor and a simulated GPU that tests them) lives in gpu/colocate.
//
// Why gate kernels at all: on the H200 a cuBLAS GEMM runs persistent thread blocks that last
// the whole kernel, and stream priority only orders block dispatch, never preempts a running
// block; so a BE GEMM of 1.6 ms delays every HP kernel queued behind it whatever the priority
// (docs/colocation.md). The runtime bounds how much BE work can stand in the HP side's way.
package colocation
