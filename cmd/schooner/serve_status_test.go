package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/serving"
)

// A stage whose machine has a preemption notice still reads ready (it serves until its
// replacement is ready); the status says it is noticed and what replaces it.
func TestServeStatusSaysAStageIsNoticed(t *testing.T) {
	at := time.Date(2026, 12, 6, 3, 4, 5, 0, time.Local)
	st := serving.Status{DeploymentID: "serve-chat", Phase: serving.PhaseServing, Replicas: 1, Depth: 2,
		Stages: []serving.StageStatus{
			{Stage: 0, Layers: serving.LayerRange{First: 0, End: 2}, State: serving.StateReady, InstanceID: "i-a"},
			{Stage: 1, Layers: serving.LayerRange{First: 2, End: 4}, State: serving.StateReady, InstanceID: "i-b",
				NoticedAt: at, ReclaimAt: at.Add(2 * time.Minute), Standby: "i-c"},
		}}
	var out bytes.Buffer
	require.NoError(t, printServingStatus(&out, st))
	lines := bytes.Split(out.Bytes(), []byte("\n"))
	var a, b string
	for _, l := range lines {
		switch {
		case bytes.Contains(l, []byte("i-a")):
			a = string(l)
		case bytes.Contains(l, []byte("i-b")):
			b = string(l)
		}
	}
	assert.Contains(t, b, "ready, noticed 03:04:05, reclaimed 03:06:05 → i-c")
	assert.NotContains(t, a, "noticed")
}

// A disaggregated deployment's status says how many prefill replicas it has and which
// stages are theirs.
func TestServeStatusNamesThePrefillPool(t *testing.T) {
	st := serving.Status{DeploymentID: "serve-chat", Phase: serving.PhaseServing, Replicas: 1, PrefillReplicas: 2, Depth: 1,
		Stages: []serving.StageStatus{
			{Stage: 0, State: serving.StateReady, InstanceID: "i-a"},
			{Pool: serving.PoolPrefill, Replica: 1, Stage: 0, State: serving.StateReady, InstanceID: "i-b"},
		},
		FailoverRecords: []serving.Failover{{Pool: serving.PoolPrefill, Replica: 1, From: "i-x", To: "i-b"}}}
	var out bytes.Buffer
	require.NoError(t, printServingStatus(&out, st))
	assert.Contains(t, out.String(), "1 × 1 stages decode + 2 × 1 prefill")
	assert.Regexp(t, `(?m)^prefill 1\s+0\s.*i-b`, out.String())
	assert.Contains(t, out.String(), "replica prefill 1 stage 0")
}
