package servingwf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/serving"
)

// disaggInput is a two-stage deployment with one decode replica and one prefill replica.
func disaggInput() serving.DeployInput {
	in := deployInput()
	in.Spec.PrefillReplicas = 1
	return in
}

// holderOf is the fake node side's holder address of an assignment's machine.
func holderOf(a serving.StageAssignment) string { return a.InstanceID + ":9100" }

// A prefill replica is placed and started beside the decode replica; each of its stages
// streams prompts to the holder the same stage of the decode replica restores from (on the
// node of that replica's next stage), and the stages query names the pools.
func TestPrefillReplicaStreamsToItsDecodeReplicasHolders(t *testing.T) {
	w, env := newWorldEnv(t)
	st1 := queryAt[serving.Status](t, env, serving.QueryStatus, time.Minute)
	pipe := queryAt[serving.Pipeline](t, env, serving.QueryStages, time.Minute)
	st := runUntilStopped(t, env, disaggInput(), 2*time.Minute, nil)

	assert.Equal(t, serving.PhaseServing, st1.Phase)
	assert.Equal(t, 1, st1.PrefillReplicas)
	require.Len(t, st1.Stages, 4, "two stages of each pool")
	pools := map[string]int{}
	for _, s := range st1.Stages {
		assert.Equal(t, serving.StateReady, s.State, "%+v", s)
		pools[s.Pool]++
	}
	assert.Equal(t, map[string]int{serving.PoolDecode: 2, serving.PoolPrefill: 2}, pools)
	assert.Equal(t, 4, st1.GPUs, "one machine per stage of either pool")

	for stage := range 2 {
		pre, dec := w.currentIn(serving.PoolPrefill, 0, stage), w.current(0, (stage+1)%2)
		require.NotEmpty(t, pre.InstanceID, "prefill stage %d started", stage)
		assert.NotEqual(t, dec.InstanceID, pre.InstanceID, "the pools never share a machine")
		assert.Equal(t, holderOf(dec), pre.NextHolderAddr, "prefill stage %d streams to the decode replica's holder", stage)
		w.Lock()
		assert.Equal(t, w.Instances[dec.InstanceID].Zone, w.Instances[pre.InstanceID].Zone,
			"prefill stage %d in the zone of that holder (not the cheapest zone for each)", stage)
		w.Unlock()
		assert.True(t, pre.Replication)
		assert.False(t, pre.Restore)
	}
	assert.Equal(t, w.currentIn(serving.PoolPrefill, 0, 1).InstanceID+":9000", w.currentIn(serving.PoolPrefill, 0, 0).NextWorkerAddr,
		"activations go along the prefill replica's own pipeline")

	require.Len(t, pipe.Replicas, 2)
	dec, pre := pipe.Replicas[0], pipe.Replicas[1]
	assert.Equal(t, serving.PoolDecode, dec.Pool)
	assert.Equal(t, serving.PoolPrefill, pre.Pool)
	assert.Equal(t, 0, pre.Feeds)
	assert.True(t, dec.Ready && pre.Ready)
	for i := range 2 {
		assert.Equal(t, dec.Stages[i].Holder, pre.Stages[i].Holder,
			"a prefill stage's predecessor finds, in the query, the holder the decode replica's stage %d restores from", i)
		assert.NotEqual(t, dec.Stages[i].Addr, pre.Stages[i].Addr)
	}
	assert.Equal(t, serving.PhaseStopped, st.Phase)
	assert.Empty(t, w.Leaked())
	assert.Len(t, w.Released, 4)
}

// Losing a prefill replica's machine is a failover like any: a replacement restores (a
// resubmitted prompt is prefilled again there) and still streams to the decode holders.
func TestPrefillStageLostIsReplaced(t *testing.T) {
	w, env := newWorldEnv(t)
	var lost serving.StageAssignment
	env.RegisterDelayedCallback(func() {
		lost = w.currentIn(serving.PoolPrefill, 0, 0)
		w.State(lost.InstanceID, cloud.StatePreempted)
	}, time.Minute)
	mid := queryAt[serving.Status](t, env, serving.QueryStatus, 2*time.Minute)
	st := runUntilStopped(t, env, disaggInput(), 3*time.Minute, nil)

	assert.Equal(t, serving.PhaseServing, mid.Phase)
	require.Equal(t, 1, st.Failovers)
	fo := st.FailoverRecords[0]
	assert.Equal(t, serving.PoolPrefill, fo.Pool)
	assert.Equal(t, lost.InstanceID, fo.From)
	repl := w.currentIn(serving.PoolPrefill, 0, 0)
	assert.Equal(t, fo.To, repl.InstanceID)
	assert.True(t, repl.Restore)
	assert.Equal(t, holderOf(w.current(0, 1)), repl.NextHolderAddr)
	assert.Equal(t, lost.NextHolderAddr, repl.NextHolderAddr, "the decode replica did not move")
	assert.Empty(t, w.Leaked())
}

// Losing a decode stage moves the holder the prefill replica streams to: the stages query
// gives the prefill stage before it the replacement's holder, as the decode stage before it.
func TestDecodeStageLostRepointsThePrefillReplica(t *testing.T) {
	w, env := newWorldEnv(t)
	var lost serving.StageAssignment
	env.RegisterDelayedCallback(func() {
		lost = w.current(0, 1)
		w.State(lost.InstanceID, cloud.StatePreempted)
	}, time.Minute)
	before := queryAt[serving.Pipeline](t, env, serving.QueryStages, time.Minute-time.Second)
	after := queryAt[serving.Pipeline](t, env, serving.QueryStages, 2*time.Minute)
	st := runUntilStopped(t, env, disaggInput(), 3*time.Minute, nil)

	require.Equal(t, 1, st.Failovers)
	assert.Equal(t, serving.PoolDecode, st.FailoverRecords[0].Pool)
	repl := w.current(0, 1)
	require.NotEqual(t, lost.InstanceID, repl.InstanceID)
	require.Len(t, before.Replicas, 2)
	require.Len(t, after.Replicas, 2)
	assert.Equal(t, holderOf(lost), before.Replicas[1].Stages[1].Holder)
	assert.Equal(t, holderOf(repl), after.Replicas[1].Stages[1].Holder, "prefill stage 0 is pointed at the new holder")
	assert.True(t, after.Replicas[1].Ready)
	assert.Empty(t, w.Leaked())
}

// A run that began before the pools existed ignored prefill_replicas (its Spec had no such
// field); replayed with this code, it must still: only the decode replicas are laid out.
func TestPrefillReplicasIgnoredByRunsFromBeforePools(t *testing.T) {
	w, env := newWorldEnv(t)
	env.OnGetVersion(poolsVersion, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	mid := queryAt[serving.Status](t, env, serving.QueryStatus, time.Minute)
	st := runUntilStopped(t, env, disaggInput(), 2*time.Minute, nil)
	assert.Equal(t, serving.PhaseServing, mid.Phase)
	assert.Len(t, mid.Stages, 2)
	assert.Zero(t, mid.PrefillReplicas)
	for _, a := range w.assignments {
		assert.Equal(t, serving.PoolDecode, a.Pool)
	}
	assert.Equal(t, serving.PhaseStopped, st.Phase)
}

// Continue-as-new carries the prefill replicas as it carries the decode ones: the next run
// re-attaches to every worker of both pools and buys nothing.
func TestContinueAsNewCarriesThePrefillPool(t *testing.T) {
	w, env := newWorldEnv(t)
	in := disaggInput()
	in.Options.ContinueAsNewAfter = 12
	env.ExecuteWorkflow(ServingDeployment, in)
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	var next serving.DeployInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Len(t, next.Carried.Slots, 4)
	assert.Equal(t, serving.PoolPrefill, next.Carried.Slots[3].Pool)
	bought := len(w.Acquires)

	env2 := newEnv(t, w)
	next.Options.ContinueAsNewAfter = 0
	pipe := queryAt[serving.Pipeline](t, env2, serving.QueryStages, time.Minute)
	w.Lock()
	w.assignments = nil
	w.Unlock()
	runUntilStopped(t, env2, next, 2*time.Minute, nil)
	assert.Equal(t, bought, len(w.Acquires), "the next run buys nothing")
	require.Len(t, w.assignments, 4)
	for _, a := range w.assignments {
		assert.True(t, a.Adopt, "%+v", a)
	}
	require.Len(t, pipe.Replicas, 2)
	assert.Equal(t, serving.PoolPrefill, pipe.Replicas[1].Pool)
	assert.True(t, pipe.Replicas[1].Ready)
	assert.Empty(t, w.Leaked())
}
