// Package checkpoint is schooner's PCcheck-style checkpoint engine.
//
// A trainer rank hands the engine a Shard (named, layer-indexed tensors) for a training step.
// Save copies the bytes into a bounded staging pool and returns, so the training step is
// blocked only for that copy; a pool of writers then persists the chunks into a preallocated
// slot, syncs the data, writes the slot's metadata, syncs it, and commits by writing a pointer
// record (sequence number and checksum, two copies). Several checkpoints are in flight at once;
// a slower older checkpoint never replaces a newer committed one, and a slot is reused only
// after a newer checkpoint committed. Every chunk carries a CRC-32C, so a restore detects a
// torn or corrupted checkpoint and falls back to the previous durable one.
//
// A step is durable across ranks only when every rank of the plan committed its shard
// (DurableSteps). Restore is by tensor name, so a checkpoint taken under one pipeline/data
// parallel split loads under another (Snapshot).
//
// The remote tier (package checkpoint/store and the Uploader) copies committed shards to object
// storage so a replacement machine in another zone can restore; the node agent
// (checkpoint/agent) is what trainers on a machine talk to.
package checkpoint
