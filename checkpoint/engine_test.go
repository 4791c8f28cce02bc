package checkpoint

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSaveReadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	var commits []int64
	opts := smallOptions(dir, zerolog.Nop())
	opts.OnCommit = func(m ShardMeta) { commits = append(commits, m.Step) }
	e := openEngine(t, opts)

	for _, size := range []int{0, 1, 4095, 64 << 10, 300_001} {
		step := int64(size)
		shard := testShard(step, size)
		m := saveWait(t, e, step, shard, plan1)
		assert.Equal(t, step, m.Step)
		assert.Equal(t, int64(size), m.Size)
		require.NoError(t, m.Validate())

		got, gm, err := e.Read(context.Background(), step)
		require.NoError(t, err)
		assert.Equal(t, m.Seq, gm.Seq)
		requireShardEqual(t, shard, got)
	}
	latest, ok := e.Latest()
	require.True(t, ok)
	assert.Equal(t, int64(300_001), latest.Step)
	assert.Equal(t, []int64{0, 1, 4095, 64 << 10, 300_001}, commits, "OnCommit in commit order")

	committed := e.Committed()
	require.Len(t, committed, 4, "every committed slot not yet reused is still listed (4 slots)")
	assert.Equal(t, int64(300_001), committed[0].Step, "newest first")

	_, _, err := e.Read(context.Background(), 12345)
	require.ErrorIs(t, err, ErrNoCheckpoint)
}

func TestWholeCRCMatchesData(t *testing.T) {
	e := openEngine(t, smallOptions(t.TempDir(), zerolog.Nop()))
	shard := testShard(7, 500_000)
	m := saveWait(t, e, 7, shard, plan1)
	var all []byte
	for _, tn := range shard.Tensors {
		all = append(all, tn.Data...)
	}
	assert.Equal(t, CRC32C(all), m.CRC32C)
	assert.Len(t, m.Chunks, 8, "500 kB in 64 KiB chunks")
}

func TestReopenKeepsCommittedSteps(t *testing.T) {
	dir := t.TempDir()
	opts := smallOptions(dir, zerolog.Nop())
	e, err := Open(opts)
	require.NoError(t, err)
	for step := int64(1); step <= 5; step++ {
		saveWait(t, e, step, testShard(step, 200_000+int(step)), plan1)
	}
	require.NoError(t, e.Close())
	_, err = e.Save(context.Background(), SaveRequest{Step: 6, Shard: testShard(6, 10), Plan: plan1})
	require.ErrorIs(t, err, ErrClosed)

	e2 := openEngine(t, opts)
	latest, ok := e2.Latest()
	require.True(t, ok)
	assert.Equal(t, int64(5), latest.Step)
	var steps []int64
	for _, m := range e2.Committed() {
		steps = append(steps, m.Step)
	}
	require.GreaterOrEqual(t, len(steps), opts.KeepCommitted)
	assert.Equal(t, []int64{5, 4}, steps[:2])
	for _, step := range steps {
		got, _, err := e2.Read(context.Background(), step)
		require.NoError(t, err)
		requireShardEqual(t, testShard(step, 200_000+int(step)), got)
	}
	shard, m, err := e2.Restore(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(5), m.Step)
	requireShardEqual(t, testShard(5, 200_005), shard)

	// New checkpoints continue the sequence.
	m6 := saveWait(t, e2, 6, testShard(6, 1000), plan1)
	assert.Greater(t, m6.Seq, latest.Seq)
}

func TestEmptyDirectoryHasNoCheckpoint(t *testing.T) {
	e := openEngine(t, smallOptions(t.TempDir(), zerolog.Nop()))
	_, ok := e.Latest()
	assert.False(t, ok)
	_, _, err := e.Restore(context.Background())
	require.ErrorIs(t, err, ErrNoCheckpoint)
}

func TestPinnedSlotIsNeverReused(t *testing.T) {
	dir := t.TempDir()
	opts := smallOptions(dir, zerolog.Nop())
	opts.MaxInFlight, opts.KeepCommitted = 1, 1 // two slots
	e := openEngine(t, opts)
	first := testShard(1, 150_000)
	saveWait(t, e, 1, first, plan1)
	r, err := e.Acquire(1)
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Meta.Step)

	for step := int64(2); step <= 6; step++ {
		saveWait(t, e, step, testShard(step, 150_000), plan1)
	}
	var all []byte
	for _, tn := range first.Tensors {
		all = append(all, tn.Data...)
	}
	got, err := io.ReadAll(io.NewSectionReader(r, 0, r.Meta.Size))
	require.NoError(t, err)
	assert.Equal(t, all, got, "the pinned checkpoint is intact after newer ones")
	_, _, err = e.Read(context.Background(), 1)
	require.NoError(t, err, "still committed while pinned")
	require.NoError(t, r.Close())
	require.NoError(t, r.Close(), "closing twice is harmless")

	for step := int64(7); step <= 9; step++ {
		saveWait(t, e, step, testShard(step, 150_000), plan1)
	}
	_, _, err = e.Read(context.Background(), 1)
	require.ErrorIs(t, err, ErrNoCheckpoint, "unpinned, the old slot is reused")
	e.mu.Lock()
	slots := len(e.slots)
	e.mu.Unlock()
	assert.Equal(t, 3, slots, "one slot was added while the pin blocked reuse")
}

func TestSaveRejectsBadRequests(t *testing.T) {
	e := openEngine(t, smallOptions(t.TempDir(), zerolog.Nop()))
	ctx := context.Background()
	_, err := e.Save(ctx, SaveRequest{Step: 1, Shard: testShard(1, 100)})
	require.Error(t, err, "plan without world size")
	bad := testShard(1, 100)
	bad.Tensors[0].Shape = []int64{1000}
	_, err = e.Save(ctx, SaveRequest{Step: 1, Shard: bad, Plan: plan1})
	require.Error(t, err)
	other := testShard(1, 100)
	other.Rank = 3
	_, err = e.Save(ctx, SaveRequest{Step: 1, Shard: other, Plan: plan1})
	require.Error(t, err)
	_, err = e.Save(ctx, SaveRequest{Step: -1, Shard: testShard(1, 100), Plan: plan1})
	require.Error(t, err)
}

func TestCallerMayReuseBuffersAfterSave(t *testing.T) {
	e := openEngine(t, smallOptions(t.TempDir(), zerolog.Nop()))
	shard := testShard(3, 400_000)
	want := testShard(3, 400_000)
	ctx := context.Background()
	p, err := e.Save(ctx, SaveRequest{Step: 3, Shard: shard, Plan: plan1, Extra: map[string]string{"iter": "3"}, Emergency: true})
	require.NoError(t, err)
	for _, tn := range shard.Tensors {
		clear(tn.Data)
	}
	m, err := p.Wait(ctx)
	require.NoError(t, err)
	assert.True(t, m.Emergency)
	assert.Equal(t, "3", m.Extra["iter"])
	got, _, err := e.Read(ctx, 3)
	require.NoError(t, err)
	requireShardEqual(t, want, got)
}

func TestOrphanedInFlightMetadataIsDiscardedOnOpen(t *testing.T) {
	dir := t.TempDir()
	opts := smallOptions(dir, zerolog.Nop())
	e, err := Open(opts)
	require.NoError(t, err)
	saveWait(t, e, 1, testShard(1, 1000), plan1)
	m2 := saveWait(t, e, 2, testShard(2, 1000), plan1)
	require.NoError(t, e.Close())

	// Roll the pointer back as if the crash came between step 2's metadata and its commit.
	d, err := scanDir(dir)
	require.NoError(t, err)
	require.Equal(t, m2.Seq, d.ptr.Seq)
	for i := range pointerNames {
		b, err := readSmallFile(dir+"/"+pointerNames[i], pointerSize)
		require.NoError(t, err)
		if p, err := decodePointer(b); err == nil && p.Seq == m2.Seq {
			require.NoError(t, os.WriteFile(dir+"/"+pointerNames[i], make([]byte, pointerSize), 0o644))
		}
	}
	e2 := openEngine(t, opts)
	latest, ok := e2.Latest()
	require.True(t, ok)
	assert.Equal(t, int64(1), latest.Step)
	_, _, err = e2.Read(context.Background(), 2)
	require.True(t, errors.Is(err, ErrNoCheckpoint))
	// A later commit with a higher seq must not resurrect step 2.
	saveWait(t, e2, 3, testShard(3, 1000), plan1)
	require.NoError(t, e2.Close())
	e3 := openEngine(t, opts)
	for _, m := range e3.Committed() {
		assert.NotEqual(t, int64(2), m.Step)
	}
}

func TestDirectoryIsLockedWhileOpen(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(smallOptions(dir, zerolog.Nop()))
	require.NoError(t, err)
	_, err = Open(smallOptions(dir, zerolog.Nop()))
	require.ErrorContains(t, err, "in use by another engine")
	require.NoError(t, e.Close())
	e2, err := Open(smallOptions(dir, zerolog.Nop()))
	require.NoError(t, err)
	require.NoError(t, e2.Close())
}
