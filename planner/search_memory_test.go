package planner_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/bridge"
)

// A suffix the search's beam drops the moment it is offered is not kept. With a global batch
// of 4 every class can hold any stage, and on the offers `plan search` sees on the simulated
// market (395 of them, 10,513 GPUs) one task's programme kept 16.2 million such suffixes:
// `plan search --model OPT-350M --global-batch 4` ran past 60 s and 9 GB before; 131 thousand
// after.
func TestSearchKeepsNoSuffixTheBeamDrops(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole-catalog search")
	}
	model, net, err := (&bridge.Models{}).Profile(bridge.ModelRef{Name: "OPT-350M"})
	require.NoError(t, err)
	// the pools `plan search` gets from a fresh simulated market (seed 1, spot)
	data, err := os.ReadFile(filepath.Join("testdata", "sim-market-pools.json"))
	require.NoError(t, err)
	var pools []planner.Pool
	require.NoError(t, json.Unmarshal(data, &pools))
	res, peak, err := planner.PeakSuffixes(planner.Request{Model: model, Network: net, Pools: pools, GlobalBatch: 4})
	require.NoError(t, err)
	require.True(t, res.Best.Estimate.Fits)
	t.Logf("%d pools, peak suffixes of one task %d", len(pools), peak)
	assert.Less(t, peak, int64(2_000_000))
}
