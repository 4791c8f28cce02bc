package agent

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNoticeKeepsTheEarliestDeadlineAndAsksEachRankOnce(t *testing.T) {
	ctx := context.Background()
	r := startAgent(t, testOptions(t))
	plan := plan1()
	plan.World = 2
	c0, c1 := r.dial(t, 0, plan), r.dial(t, 1, plan)

	early := time.Date(2030, 1, 1, 0, 0, 30, 0, time.UTC)
	r.a.Notice(early)
	r.a.Notice(early.Add(time.Minute)) // a later notice does not move the deadline
	for _, c := range []*Client{c0, c1} {
		p, err := c.Poll(ctx)
		require.NoError(t, err)
		assert.True(t, p.CheckpointNow)
		assert.True(t, early.Equal(p.Deadline))
	}
	emergency, err := c0.Save(ctx, 3, testShard(0, 3, 4096), nil, false)
	require.NoError(t, err)
	assert.True(t, emergency)
	p, err := c0.Poll(ctx)
	require.NoError(t, err)
	assert.False(t, p.CheckpointNow, "rank 0 saved")
	p, err = c1.Poll(ctx)
	require.NoError(t, err)
	assert.True(t, p.CheckpointNow, "rank 1 has not")
}

func TestUploadTime(t *testing.T) {
	assert.Equal(t, 2*time.Second, uploadTime(200e6, 100e6))
	assert.Greater(t, uploadTime(1, 0), 100*365*24*time.Hour, "no bandwidth: never")
}
