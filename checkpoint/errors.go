package checkpoint

import "errors"

// ErrNoCheckpoint means no committed, intact checkpoint exists where one was looked for.
var ErrNoCheckpoint = errors.New("no committed checkpoint")

// ErrCorrupt means a checkpoint's bytes do not match its checksums. Restores treat it as absent
// and fall back to the previous durable checkpoint, saying so in the log.
var ErrCorrupt = errors.New("checkpoint is corrupt")

// ErrClosed is returned by an engine or agent after Close.
var ErrClosed = errors.New("checkpoint engine is closed")

// ErrSourceFault means reading the memory a save was given faulted: the caller's buffer (a
// memory-mapped file of another process) was shrunk or unmapped while it was copied. Only that
// save fails.
var ErrSourceFault = errors.New("the checkpoint's source memory went away during the copy")
