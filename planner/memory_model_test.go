package planner

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
)

func TestMemoryModelReplacesTheDefaults(t *testing.T) {
	t.Parallel()
	m := toyA100()
	m.MemoryModel = &MemoryModel{BytesPerParam: 16, OverheadBytes: 1e9}
	p := plan(8, 1, stage(0, 3, replica(gpu.A100_40, 1, "us-central1-a", 4)))

	est := simulateOnGigabit(t, p, m)
	// 4e6 params × 16 B + 4e6 activation floats × 4 B × 1 in flight + 1 GB measured overhead.
	want := 4e6*16 + 4e6*4 + 1e9
	assert.InDelta(t, want, est.Stages[0].PeakMemBytes, 1)

	got, ok := PeakMemory(m, gpu.A100_40, 1, 1, 0, 3, 0, 1, 8)
	require.True(t, ok)
	assert.InDelta(t, want, got, 1)
	got, ok = NewSim(m, nil).StagePeakMemory(gpu.A100_40, 1, 1, 0, 3, 0, 1, 8)
	require.True(t, ok)
	assert.InDelta(t, want, got, 1)
}

func TestMemoryModelUnsetKeepsTheDefaults(t *testing.T) {
	t.Parallel()
	want := 4e6*TrainingBytesPerParam + 4e6*4 + MemOverheadBytes
	for name, mm := range map[string]*MemoryModel{
		"nil":              nil,
		"zero per param":   {OverheadBytes: 1e9},
		"negative (unset)": {BytesPerParam: -1, OverheadBytes: 1e9},
	} {
		m := toyA100()
		m.MemoryModel = mm
		got, ok := PeakMemory(m, gpu.A100_40, 1, 1, 0, 3, 0, 1, 8)
		require.True(t, ok, name)
		assert.InDelta(t, want, got, 1, name)
		got, ok = NewSim(m, nil).StagePeakMemory(gpu.A100_40, 1, 1, 0, 3, 0, 1, 8)
		require.True(t, ok, name)
		assert.InDelta(t, want, got, 1, name)
	}
}

func TestSearchUsesTheMemoryModel(t *testing.T) {
	t.Parallel()
	// 60 GiB of weights at the default 24 B per parameter needs more than four V100-16s
	// (TestSearchNotEnoughGPUs); at a measured 4 B per parameter it is 10 GiB and fits.
	m := srModel(8, 60, 5*ms)
	m.MemoryModel = &MemoryModel{BytesPerParam: 4, OverheadBytes: 0.5e9}
	req := Request{Model: m, Network: srNet(), GlobalBatch: 8,
		Pools: []Pool{srPool(gpu.V100, "us-central1-a", 4, 4, 2.55)}}
	res, err := Search(req)
	require.NoError(t, err)
	assert.True(t, res.Best.Estimate.Fits)
	for _, st := range res.Best.Estimate.Stages {
		assert.Less(t, st.PeakMemBytes, 16.0*gib)
	}
}
