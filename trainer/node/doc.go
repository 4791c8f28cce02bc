// Package node supervises the trainers of one machine: it runs each assignment a job gives the
// machine through the simulated trainer (trainer/sim) or the user's command (trainer/command),
// each with its own checkpoint agent (checkpoint/agent) on a local tier under the node's data
// directory and the job's remote store, tracks what runs, stops older epochs when the job asks,
// relays preemption notices to the agents, and reports progress and durable checkpoints.
//
// The package knows nothing of Temporal: the RunTrainer and StopTrainers activities
// (activities/trainingact.Trainer) adapt heartbeats, cancellation and errors to a Supervisor,
// and tests run one without a Temporal server.
package node
