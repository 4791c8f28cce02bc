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
	// ReadShardMeta reads one rank's metadata of a step without its data, so a restore can lay
	// out where each tensor goes before reading a byte (errors as ReadShard).
	ReadShardMeta(ctx context.Context, step int64, rank int) (ShardMeta, error)
	// ReadShardInto reads and verifies every chunk of the shard m describes (as ReadShardMeta
	// returned it), writing tensor i's bytes into dst[i] where that is not nil (len(dst[i]) ==
	// m.Tensors[i].Length). The first failing chunk in order is the error; dst's contents are
	// then undefined. A shard that changed since m was read wraps ErrNoCheckpoint.
	ReadShardInto(ctx context.Context, m ShardMeta, dst [][]byte) error
	// String names the source for logs.
	String() string
}
