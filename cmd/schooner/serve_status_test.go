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
