//go:build !agentonly

package main

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/devserver/stack"
	"github.com/schooner-ml/schooner/workers/workerstest"
)

// With --interruptions sqs a preemption in the market reaches the job through the EC2
// face's SQS queue, read with the real SDK.
func TestDevRelaysPreemptionsThroughSQS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := stack.Start(ctx, stack.Options{Headless: true, TimeScale: 600, Logger: zerolog.Nop()})
	require.NoError(t, err)
	defer s.Stop(10 * time.Second)
	apis, err := serveSimAPIs(s.Market, "127.0.0.1:0", "127.0.0.1:0")
	require.NoError(t, err)
	defer apis.Close()
	rec := workerstest.NewNoticeRecorder()
	require.NoError(t, relayFromSQS(ctx, s, apis, rec, zerolog.Nop()))

	offers, err := s.Market.Offerings(ctx, cloud.OfferingFilter{InstanceTypes: []string{"p3.2xlarge"}})
	require.NoError(t, err)
	require.NotEmpty(t, offers)
	o := offers[0]
	require.Equal(t, "aws", o.Provider)
	insts, err := s.Market.Create(ctx, cloud.CreateRequest{JobID: "job-sqs", Zone: o.Zone, InstanceType: o.InstanceType,
		Capacity: cloud.OnDemand, Count: 1})
	require.NoError(t, err)
	require.NoError(t, s.Market.Preempt(insts[0].ID, 0))
	deadline := time.Now().Add(20 * time.Second)
	for len(rec.Of("job-sqs")) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	got := rec.Of("job-sqs")
	require.NotEmpty(t, got, "no notice reached the job")
	assert.Equal(t, insts[0].ID, got[0].InstanceID)
	assert.Equal(t, cloud.Preempted, got[0].Kind)
}
