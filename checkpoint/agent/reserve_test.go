package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
)

func TestReserveGrowsTheRanksSlotsBeforeTheFirstSave(t *testing.T) {
	opts := testOptions(t)
	r := startAgent(t, opts)
	ctx := context.Background()

	c, err := Dial(ctx, r.sock)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Reserve(ctx, 1<<20)
	require.ErrorContains(t, err, "reserve before hello")
	_, err = c.Hello(ctx, 0, plan1())
	require.NoError(t, err)
	_, err = c.Reserve(ctx, 0)
	require.ErrorContains(t, err, "give the shard's size")

	n, err := c.Reserve(ctx, 1<<20)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, 2, "every slot of the rank (MaxInFlight+KeepCommitted)")
	data, err := filepath.Glob(filepath.Join(checkpoint.RankDir(opts.Dir, 0), "*"))
	require.NoError(t, err)
	grown := 0
	for _, p := range data {
		if st, err := os.Stat(p); err == nil && st.Size() >= 1<<20 {
			grown++
		}
	}
	assert.Equal(t, n, grown, "slot data files of at least 1 MiB: %v", data)
}
