//go:build !agentonly

package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/devserver/stack"
	"github.com/schooner-ml/schooner/training"
)

// noticeRecorder is a JobReporter that keeps the notices.
type noticeRecorder struct {
	mu      sync.Mutex
	notices map[string][]training.PreemptionNotice
}

func (r *noticeRecorder) Progress(context.Context, string, training.Progress) error { return nil }
func (r *noticeRecorder) Committed(context.Context, string, training.CheckpointCommitted) error {
	return nil
}
func (r *noticeRecorder) Notice(_ context.Context, job string, n training.PreemptionNotice) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notices[job] = append(r.notices[job], n)
	return nil
}

func (r *noticeRecorder) of(job string) []training.PreemptionNotice {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]training.PreemptionNotice(nil), r.notices[job]...)
}

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
	rec := &noticeRecorder{notices: map[string][]training.PreemptionNotice{}}
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
	for len(rec.of("job-sqs")) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	got := rec.of("job-sqs")
	require.NotEmpty(t, got, "no notice reached the job")
	assert.Equal(t, insts[0].ID, got[0].InstanceID)
	assert.Equal(t, cloud.Preempted, got[0].Kind)
}
