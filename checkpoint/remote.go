package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/checkpoint/store"
)

// DefaultRetain is how many durable steps the remote tier keeps when Remote.Retain is 0: the
// newest, and two to fall back to if it turns out corrupt.
const DefaultRetain = 3

// remoteMaxMeta bounds how much of a metadata or COMMIT object is read, so a wrong object
// cannot exhaust memory.
const remoteMaxMeta = 64 << 20

// errRemoteInvalid marks a shard PutShard refuses whatever the store does; retrying is useless.
var errRemoteInvalid = errors.New("invalid shard")

// Remote is the remote tier: committed shards copied to object storage, where they outlive the
// machine (see remote_layout.go for the layout). A step is durable once its COMMIT object
// exists, which whoever uploads the step's last shard writes. It is a Source.
type Remote struct {
	Store store.Store
	// Retain is how many of the newest durable steps Prune keeps (default DefaultRetain when
	// 0; negative keeps everything).
	Retain int
	// StaleAfter is how long an interrupted upload's leftovers (S3 multipart uploads, a
	// directory store's temp files) may sit untouched before Sweep removes them (default
	// DefaultStaleAfter when 0; negative never sweeps). It must exceed the longest upload.
	StaleAfter time.Duration
	Logger     zerolog.Logger
}

// DefaultStaleAfter is Remote.StaleAfter's default.
const DefaultStaleAfter = time.Hour

// Sweep removes the leftovers of uploads abandoned for longer than StaleAfter — a process killed
// mid-upload leaves parts that retention cannot see — when the store can (store.Sweeper).
func (r *Remote) Sweep(ctx context.Context) (int, error) {
	sw, ok := r.Store.(store.Sweeper)
	if !ok || r.StaleAfter < 0 {
		return 0, nil
	}
	after := r.StaleAfter
	if after == 0 {
		after = DefaultStaleAfter
	}
	n, err := sw.Sweep(ctx, after)
	if n > 0 {
		r.Logger.Info().Int("removed", n).Dur("stale_after", after).Str("store", r.Store.String()).
			Msg("removed the leftovers of abandoned uploads")
	}
	return n, err
}

var _ Source = (*Remote)(nil)

// String names the store.
func (r *Remote) String() string { return "remote:" + r.Store.String() }

// retain is the effective retention.
func (r *Remote) retain() int {
	if r.Retain == 0 {
		return DefaultRetain
	}
	return r.Retain
}

// PutShard uploads one rank's shard: the data, then the metadata, then — if that completed the
// step — the COMMIT object, after which older steps are pruned. committedStep reports whether
// the step is durable when PutShard returns. Calling it again for the same shard is safe (an
// S3 store skips objects already stored; an interrupted multipart upload resumes).
func (r *Remote) PutShard(ctx context.Context, meta ShardMeta, data io.ReaderAt) (committedStep bool, err error) {
	if err := meta.Validate(); err != nil {
		return false, fmt.Errorf("uploading step %d rank %d: %w: %w", meta.Step, meta.Rank, errRemoteInvalid, err)
	}
	if err := meta.Plan.Validate(); err != nil {
		return false, fmt.Errorf("uploading step %d rank %d: %w: %w", meta.Step, meta.Rank, errRemoteInvalid, err)
	}
	if meta.Rank >= meta.Plan.World {
		return false, fmt.Errorf("uploading step %d: %w: rank %d is outside the plan's world of %d", meta.Step, errRemoteInvalid, meta.Rank, meta.Plan.World)
	}
	// A durable step is immutable: replacing a shard under its COMMIT would make it look
	// corrupt. A shard re-saved after the step went durable is not needed anyway.
	if done, err := r.committed(ctx, meta.Step); err != nil {
		return false, err
	} else if done {
		r.Logger.Debug().Int64("step", meta.Step).Int("rank", meta.Rank).Msg("step already durable; not uploading the shard again")
		return true, nil
	}
	if err := r.Store.Put(ctx, remoteDataKey(meta.Step, meta.Rank), data, meta.Size, meta.CRC32C); err != nil {
		return false, fmt.Errorf("uploading step %d rank %d data: %w", meta.Step, meta.Rank, err)
	}
	mb, err := meta.Encode()
	if err != nil {
		return false, fmt.Errorf("encoding step %d rank %d metadata: %w", meta.Step, meta.Rank, err)
	}
	if err := r.Store.Put(ctx, remoteMetaKey(meta.Step, meta.Rank), bytes.NewReader(mb), int64(len(mb)), CRC32C(mb)); err != nil {
		return false, fmt.Errorf("uploading step %d rank %d metadata: %w", meta.Step, meta.Rank, err)
	}
	committed, err := r.commitIfComplete(ctx, meta.Step, meta.Plan.World)
	if err != nil {
		return false, err
	}
	if committed {
		if err := r.Prune(ctx); err != nil {
			r.Logger.Warn().Err(err).Str("store", r.Store.String()).Msg("pruning old checkpoints")
		}
		if _, err := r.Sweep(ctx); err != nil {
			r.Logger.Warn().Err(err).Str("store", r.Store.String()).Msg("removing the leftovers of abandoned uploads")
		}
	}
	return committed, nil
}

// committed reports whether step has a COMMIT object.
func (r *Remote) committed(ctx context.Context, step int64) (bool, error) {
	objs, err := r.Store.List(ctx, remoteCommitKey(step))
	if err != nil {
		return false, fmt.Errorf("checking whether step %d is durable: %w", step, err)
	}
	for _, o := range objs {
		if o.Key == remoteCommitKey(step) {
			return true, nil
		}
	}
	return false, nil
}

// commitIfComplete writes step's COMMIT if every rank 0..world-1 has data and metadata stored.
// Several uploaders may race to it; they write the same content, so that is harmless.
func (r *Remote) commitIfComplete(ctx context.Context, step int64, world int) (bool, error) {
	objs, err := r.Store.List(ctx, remoteStepDir(step))
	if err != nil {
		return false, fmt.Errorf("listing step %d: %w", step, err)
	}
	data, meta := map[int]bool{}, map[int]bool{}
	for _, o := range objs {
		k, ok := parseRemoteKey(o.Key)
		switch {
		case !ok:
		case k.commit:
			return true, nil
		case k.data:
			data[k.rank] = true
		case k.meta:
			meta[k.rank] = true
		}
	}
	for rank := range world {
		if !data[rank] || !meta[rank] {
			return false, nil
		}
	}
	c := StepCommit{Format: FormatVersion, Step: step, World: world}
	for rank := range world {
		mb, err := r.getSmall(ctx, remoteMetaKey(step, rank))
		if err != nil {
			return false, fmt.Errorf("reading step %d rank %d metadata to commit: %w", step, rank, err)
		}
		m, err := DecodeShardMeta(mb)
		if err != nil {
			return false, fmt.Errorf("step %d rank %d metadata in %s: %w", step, rank, r.Store, err)
		}
		if m.Step != step || m.Rank != rank {
			return false, fmt.Errorf("step %d rank %d metadata in %s describes step %d rank %d",
				step, rank, r.Store, m.Step, m.Rank)
		}
		if m.Plan.World != world {
			// A shard of this step saved under an earlier plan (a machine that outlived its
			// epoch finished uploading it after the replan) is not this plan's: the step is
			// complete once this plan's rank uploads its own shard over it, and that upload
			// commits it. Not an error to retry.
			r.Logger.Debug().Int64("step", step).Int("rank", rank).Int("world", world).Int("world_then", m.Plan.World).
				Msg("a shard of an earlier plan is in the way; the step commits when this plan's rank uploads")
			return false, nil
		}
		if rank == 0 {
			c.Plan = m.Plan
		}
		if m.Created.After(c.Created) {
			c.Created = m.Created
		}
		c.Emergency = c.Emergency || m.Emergency
		c.Ranks = append(c.Ranks, RankCommit{Rank: rank, MetaCRC32C: CRC32C(mb), Size: m.Size, CRC32C: m.CRC32C})
	}
	cb, err := json.Marshal(c)
	if err != nil {
		return false, fmt.Errorf("encoding step %d commit: %w", step, err)
	}
	if err := r.Store.Put(ctx, remoteCommitKey(step), bytes.NewReader(cb), int64(len(cb)), CRC32C(cb)); err != nil {
		return false, fmt.Errorf("committing step %d: %w", step, err)
	}
	r.Logger.Info().Int64("step", step).Int("world", world).Int64("bytes", c.Size()).Str("store", r.Store.String()).
		Msg("checkpoint step is durable in the remote store")
	return true, nil
}

// getSmall reads a metadata-sized object whole.
func (r *Remote) getSmall(ctx context.Context, key string) ([]byte, error) {
	rc, err := r.Store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, remoteMaxMeta+1))
	if errors.Is(err, store.ErrChecksum) {
		return nil, fmt.Errorf("reading %s: %w: %w", key, ErrCorrupt, err)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", key, err)
	}
	if len(b) > remoteMaxMeta {
		return nil, fmt.Errorf("%s is larger than %d bytes: %w", key, remoteMaxMeta, ErrCorrupt)
	}
	return b, nil
}

// DurableSteps lists the steps with a COMMIT object, newest first.
func (r *Remote) DurableSteps(ctx context.Context) ([]int64, error) {
	objs, err := r.Store.List(ctx, remoteStepPrefix)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", r.Store, err)
	}
	var steps []int64
	for _, o := range objs {
		if k, ok := parseRemoteKey(o.Key); ok && k.commit {
			steps = append(steps, k.step)
		}
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i] > steps[j] })
	return steps, nil
}

// Commit reads a step's COMMIT object; a step that has none wraps ErrNoCheckpoint.
func (r *Remote) Commit(ctx context.Context, step int64) (StepCommit, error) {
	cb, err := r.getSmall(ctx, remoteCommitKey(step))
	if errors.Is(err, store.ErrNotFound) {
		return StepCommit{}, fmt.Errorf("step %d in %s has no COMMIT: %w", step, r.Store, ErrNoCheckpoint)
	}
	if err != nil {
		return StepCommit{}, fmt.Errorf("reading step %d commit: %w", step, err)
	}
	var c StepCommit
	if err := json.Unmarshal(cb, &c); err != nil {
		return StepCommit{}, fmt.Errorf("decoding step %d commit in %s: %v: %w", step, r.Store, err, ErrCorrupt)
	}
	if c.Step != step || c.World < 1 || len(c.Ranks) != c.World {
		return StepCommit{}, fmt.Errorf("step %d commit in %s describes step %d with %d of %d ranks: %w",
			step, r.Store, c.Step, len(c.Ranks), c.World, ErrCorrupt)
	}
	return c, nil
}
