// Package agent is the node checkpoint agent: the one process on a machine that trainers hand
// their checkpoints to, so a training step waits only for two memory copies while the agent
// persists, commits and uploads in the background.
//
// Trainers talk to it over a Unix socket (newline-delimited JSON, one request at a time per
// connection) and move tensor bytes through shared memory: the client writes a save into a file
// under /dev/shm that both sides map, and the agent writes a restore into a fresh one. Each
// rank's shards go to that rank's local engine (checkpoint.Engine) under <dir>/rank-NNNNN;
// committed shards are uploaded to object storage (checkpoint.Remote) so a replacement machine
// can restore. When the cloud announces a preemption (Notice, or a Watcher on the instance
// metadata), Poll tells the trainers to checkpoint now, the next save is an emergency one, and
// the agent uploads it first, or, if the remaining time is too short for its size, makes sure
// the newest step already committed gets out instead.
//
// Client is the Go side of the protocol (the simulated trainer); trainer/python/schooner_ckpt
// is the Python side. docs/checkpoints.md ("Node agent") describes the protocol.
package agent
