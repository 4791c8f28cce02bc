package stage

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/schooner-ml/schooner/serving"
)

// A prefill replica and a decode replica share replica number 0: each stage follows its own
// pool's successor, and a prefill stage's holder is the decode replica's (as the workflow's
// stages query gives it), not its successor's own node's.
func TestSuccessorIsLookedUpInTheStagesPool(t *testing.T) {
	p := serving.Pipeline{Replicas: []serving.ReplicaStages{
		{Replica: 0, Ready: true, Stages: []serving.StageAddr{
			{Stage: 0, Addr: "d0:1", Holder: "d0:9", Ready: true}, {Stage: 1, Addr: "d1:1", Holder: "d1:9", Ready: true}}},
		{Pool: serving.PoolPrefill, Replica: 0, Ready: true, Stages: []serving.StageAddr{
			{Stage: 0, Addr: "p0:1", Holder: "d0:9", Ready: true}, {Stage: 1, Addr: "p1:1", Holder: "d1:9", Ready: true}}},
	}}
	got, ok := Successor(p, serving.PoolDecode, 0, 0, 2)
	assert.True(t, ok)
	assert.Equal(t, Peers{Next: "d1:1", Holder: "d1:9"}, got)
	got, ok = Successor(p, serving.PoolPrefill, 0, 0, 2)
	assert.True(t, ok)
	assert.Equal(t, Peers{Next: "p1:1", Holder: "d1:9"}, got, "activations along its own pipeline, prompts to the decode holder")
	_, ok = Successor(p, serving.PoolPrefill, 1, 0, 2)
	assert.False(t, ok, "no prefill replica 1")
}
