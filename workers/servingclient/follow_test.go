package servingclient

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/serving/router"
)

func TestRoutesOfListsEveryReplicaWithStagesOnlyOnceReady(t *testing.T) {
	p := serving.Pipeline{Replicas: []serving.ReplicaStages{
		{Replica: 0, Ready: false, Stages: []serving.StageAddr{{Stage: 0}, {Stage: 1, Addr: "b:2", Ready: true}}},
		{Replica: 1, Ready: true, Stages: []serving.StageAddr{{Stage: 0, Addr: "c:1", Node: "i-3", Ready: true}, {Stage: 1, Addr: "c:2", Node: "i-4", Ready: true}}},
	}}
	assert.Equal(t, []router.ReplicaRoute{
		{Replica: 0},
		{Replica: 1, Stages: []router.StageAddr{{Addr: "c:1", Node: "i-3"}, {Addr: "c:2", Node: "i-4"}}},
	}, RoutesOf(p))
	assert.Empty(t, RoutesOf(serving.Pipeline{}), "no replica yet: the pool keeps what it has")
}

func TestRoutesOfKeepsThePrefillPool(t *testing.T) {
	p := serving.Pipeline{Replicas: []serving.ReplicaStages{
		{Replica: 0, Ready: true, Stages: []serving.StageAddr{{Stage: 0, Addr: "d:1", Holder: "d:9", Ready: true}}},
		{Pool: serving.PoolPrefill, Replica: 0, Feeds: 0, Ready: true, Stages: []serving.StageAddr{{Stage: 0, Addr: "p:1", Holder: "d:9", Ready: true}}},
		{Pool: serving.PoolPrefill, Replica: 1, Feeds: 0},
	}}
	assert.Equal(t, []router.ReplicaRoute{
		{Replica: 0, Stages: []router.StageAddr{{Addr: "d:1"}}},
		{Pool: router.PoolPrefill, Replica: 0, Stages: []router.StageAddr{{Addr: "p:1"}}},
		{Pool: router.PoolPrefill, Replica: 1},
	}, RoutesOf(p))
	assert.Equal(t, serving.PoolPrefill, router.PoolPrefill, "the router and the deployment name the pool alike")
}

func TestSettledOnlyWithEveryReplicaReadyAndNoStageMoving(t *testing.T) {
	ready := func(moving bool) serving.ReplicaStages {
		return serving.ReplicaStages{Ready: true, Stages: []serving.StageAddr{{Stage: 0, Ready: true}, {Stage: 1, Ready: true, Moving: moving}}}
	}
	assert.True(t, Settled(serving.Pipeline{}))
	assert.True(t, Settled(serving.Pipeline{Replicas: []serving.ReplicaStages{ready(false), ready(false)}}))
	assert.False(t, Settled(serving.Pipeline{Replicas: []serving.ReplicaStages{ready(false), ready(true)}}), "a stage moves to a standby")
	assert.False(t, Settled(serving.Pipeline{Replicas: []serving.ReplicaStages{ready(false), {Replica: 1}}}), "a replica is down")
}
