package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Only the pools whose flag is given change; nothing given, or a count that cannot be meant,
// is refused before the workflow is asked.
func TestServeScaleSendsOnlyThePoolsGiven(t *testing.T) {
	parse := func(args ...string) (int, *int, error) {
		cmd := newServeScaleCommand(&globals{})
		require.NoError(t, cmd.ParseFlags(args))
		replicas, _ := cmd.Flags().GetInt("replicas")
		prefill, _ := cmd.Flags().GetInt("prefill-replicas")
		req, err := scaleRequest(cmd, replicas, prefill)
		return req.Replicas, req.PrefillReplicas, err
	}
	_, _, err := parse()
	assert.ErrorContains(t, err, "nothing to scale")
	_, _, err = parse("--replicas", "0")
	assert.ErrorContains(t, err, "--replicas must be at least 1")
	_, _, err = parse("--prefill-replicas", "-1")
	assert.ErrorContains(t, err, "--prefill-replicas must be 0 or more")

	r, p, err := parse("--replicas", "3")
	require.NoError(t, err)
	assert.Equal(t, 3, r)
	assert.Nil(t, p, "the prefill pool keeps its size")

	r, p, err = parse("--prefill-replicas", "0")
	require.NoError(t, err)
	assert.Zero(t, r, "the decode replicas keep theirs")
	require.NotNil(t, p)
	assert.Zero(t, *p)

	r, p, err = parse("--replicas", "2", "--prefill-replicas", "1")
	require.NoError(t, err)
	assert.Equal(t, 2, r)
	require.NotNil(t, p)
	assert.Equal(t, 1, *p)
}
