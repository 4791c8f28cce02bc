package agent

import (
	"context"
	"io"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/checkpoint"
)

// The agent reaches the local engine, the uploader and the restore path through these narrow
// interfaces, wired to the checkpoint package in one place (wire.go), so what the agent relies
// on is written down and a fake can stand in where a test needs one.

// engine is one rank's local checkpoint engine.
type engine interface {
	// Save returns once the shard's bytes are copied out of the caller's memory.
	Save(ctx context.Context, req saveArgs) (pending, error)
	// Latest is the newest committed shard.
	Latest() (checkpoint.ShardMeta, bool)
	// Intact is the newest committed shard whose bytes verify (ErrNoCheckpoint for none).
	Intact(ctx context.Context) (checkpoint.ShardMeta, error)
	// Acquire pins a committed step so its slot is not reused while it is read.
	Acquire(step int64) (*openShard, error)
	// Reserve grows the slots to hold a shard of n bytes ahead of the first save and says how
	// many hold it now.
	Reserve(n int64) (int, error)
	Close() error
}

// saveArgs is one save handed to an engine.
type saveArgs struct {
	Step      int64
	Shard     checkpoint.Shard
	Plan      checkpoint.PlanInfo
	Extra     map[string]string
	Emergency bool
	// Check is called once the shard's bytes are copied; an error fails the save (the
	// client's buffer shrank under the copy).
	Check func() error
}

// pending is a save being persisted.
type pending interface {
	Done() <-chan struct{}
	Wait(ctx context.Context) (checkpoint.ShardMeta, error)
}

// openShard is a pinned committed shard; Close unpins it.
type openShard struct {
	Meta  checkpoint.ShardMeta
	Data  io.ReaderAt
	Close func() error
}

// uploadSource is one shard for the uploader, opened only when its upload starts.
type uploadSource = checkpoint.ShardSource

// uploader copies shards to the remote tier in the background, emergency shards first, and
// reports each shard's outcome once (checkpoint.Uploader).
type uploader interface {
	Enqueue(src uploadSource)
	Flush(ctx context.Context) error
	Pending() int
	Bandwidth() float64
	Close() error
}

// wiring is how the agent makes its dependencies (defaultWiring, in wire.go).
type wiring struct {
	// openEngine opens one rank's engine; opts.OnCommit is called after each commit.
	openEngine func(opts engineOptions) (engine, error)
	// newRemote makes the remote tier over the options' store.
	newRemote func(o Options) (checkpoint.Source, error)
	// newUploader starts the uploader to remote; onDone is called once per shard enqueued,
	// when it is uploaded (committedStep: the step became durable), superseded or given up.
	newUploader func(remote checkpoint.Source, o Options, onDone func(m checkpoint.ShardMeta, committedStep bool, err error)) (uploader, error)
	// encode lays a shard out in memory the way the remote tier stores it (remote mode).
	encode func(step int64, shard checkpoint.Shard, plan checkpoint.PlanInfo, extra map[string]string, chunkSize int64) (checkpoint.ShardMeta, []byte, error)
	// localSource reads the committed shards under the agent's directory.
	localSource func(dir string, log zerolog.Logger) checkpoint.Source
	// tryDurable picks the step a restore reads (checkpoint.TryDurable): step itself, or with
	// step < 0 the newest durable one that load reads without ErrCorrupt or ErrNoCheckpoint.
	tryDurable func(ctx context.Context, src checkpoint.Source, step int64, log zerolog.Logger, load func(step int64) error) error
}

// engineOptions open one rank's engine.
type engineOptions struct {
	Dir      string
	Rank     int
	OnCommit func(checkpoint.ShardMeta)
	Agent    Options
}
