// Package planner decides how to train a model on whatever GPUs can be had: pipeline stages,
// data-parallel degree, tensor-parallel degree and GPU type per stage, zones, microbatch
// size. It follows Sailor (Strati et al., 2025): profiles of per-layer compute and memory, a
// simulator of iteration time and peak memory, and a pruned dynamic-programming search, for
// maximum throughput or minimum cost under a budget. Pure Go: no I/O, no Temporal; callers
// load profiles (see profiles.go) and pass offerings in.
package planner
