// Package interference is the contract of GPU interference profiling: which workloads are
// paired, under which sharing mechanism, and the versioned result format a study writes and
// the placement code reads. It has no Temporal and no GPU code: the runner, the analysis and
// the report live in gpu/interference, the study workflow in workflows/interferencewf.
//
// Why a study at all: NVML reports about 100% "utilisation" for a single thread block, so it
// cannot tell whether two jobs fit on one GPU. How much a latency-critical workload slows
// beside a best-effort one, under each mechanism the GPU offers, can (docs/interference.md).
package interference
