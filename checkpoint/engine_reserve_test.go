package checkpoint

import (
	"context"
	"os"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReserveGrowsEverySlotAheadOfTheFirstSave(t *testing.T) {
	e := openEngine(t, smallOptions(t.TempDir(), zerolog.Nop()))
	const size = 300_001
	n, err := e.Reserve(size)
	require.NoError(t, err)
	e.mu.Lock()
	slots := append([]*slot(nil), e.slots...)
	e.mu.Unlock()
	require.Equal(t, len(slots), n, "every slot (MaxInFlight+KeepCommitted)")
	for _, s := range slots {
		st, err := os.Stat(s.dataPath)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, st.Size(), int64(size), "slot %d on disk", s.idx)
		assert.Zero(t, s.pins, "pins released")
	}
	again, err := e.Reserve(size)
	require.NoError(t, err)
	assert.Equal(t, n, again, "already reserved: nothing to grow")

	shard := testShard(7, size)
	m := saveWait(t, e, 7, shard, plan1)
	got, _, err := e.Read(context.Background(), m.Step)
	require.NoError(t, err)
	requireShardEqual(t, shard, got)

	_, err = e.Reserve(-1)
	require.ErrorContains(t, err, "negative")
	require.NoError(t, e.Close())
	_, err = e.Reserve(size)
	require.ErrorIs(t, err, ErrClosed)
}

func TestAFreeSlotPinnedByReserveIsNotPickedForASave(t *testing.T) {
	e := openEngine(t, smallOptions(t.TempDir(), zerolog.Nop()))
	e.mu.Lock()
	for _, s := range e.slots {
		s.pins++
	}
	picked := e.pickSlotLocked()
	for _, s := range e.slots {
		s.pins--
	}
	e.mu.Unlock()
	assert.Nil(t, picked, "every slot is being grown: a save adds one instead")
}
