package checkpoint

import "context"

// Source is where a restore reads committed shards from: a local root of per-rank engine
// directories (LocalRoot) or the remote tier (Remote). Both verify every checksum they read.
type Source interface {
	// DurableSteps lists, newest first, the steps for which every rank of the step's plan has
	// a committed shard.
	DurableSteps(ctx context.Context) ([]int64, error)
	// ReadShard reads and verifies one rank's shard of a step. A checksum mismatch is an error
	// wrapping ErrCorrupt; a missing shard wraps ErrNoCheckpoint.
	ReadShard(ctx context.Context, step int64, rank int) (Shard, ShardMeta, error)
	// String names the source for logs.
	String() string
}
