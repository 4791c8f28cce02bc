// Package sim is the simulated trainer: a stand-in for a GPU training process that runs on CPU,
// sleeps for the time the planner predicts an iteration takes under the current plan (scaled by
// the simulated cloud's time scale), and holds a small, deterministic model state.
//
// The state is SIMULATED: a few KiB of float32 tensors per layer whose values are a pure
// function of (seed, layer, iteration), updated one iteration at a time with float32 arithmetic
// that is bit-reproducible in Go. It stands for the weights and optimizer state of a real model
// only in that it is checkpointed, restored and compared exactly like one: saved through the
// real checkpoint agent (checkpoint/agent), restored by tensor name and layer under whatever
// plan the job runs next. Because an uninterrupted run can be recomputed from scratch
// (ExpectedLayer), VerifyStep proves that a job that met preemptions and replans ended in
// exactly the state it would have reached without them.
//
// The package is a domain package: it knows nothing of Temporal. A node's trainer/node.Supervisor
// runs it (inside the RunTrainer activity).
package sim
