// Package interference runs an interference study on one GPU and reads its results: the
// runner (Study) drives an Executor through every workload alone and every pair under every
// mechanism, taking the median of repeated runs; Analyze turns a study into slowdowns against
// the dedicated runs and marks each pair's Pareto front (latency-critical p99 slowdown against
// best-effort throughput); WriteTable and WriteSVG render it. The result format is the
// contract package's (interference). The executor that runs real kernels on a GPU sits beside
// the node agent; fake.Executor is a model of one for tests.
package interference
