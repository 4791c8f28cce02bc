package trainingwf

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/training"
)

// heldGPUHours integrates the GPUs the timeline shows held, as steps (a holding lasts until
// the next point), from its first point to end, in hours.
func heldGPUHours(ps []training.TimelinePoint, end time.Time) float64 {
	total := 0.0
	for i, p := range ps {
		next := end
		if i+1 < len(ps) {
			next = ps[i+1].At
		}
		n := 0
		for _, g := range p.GPUs {
			n += g
		}
		total += float64(n) * next.Sub(p.At).Hours()
	}
	return total
}

// longTimeline samples a job of n events, one a minute: mostly progress, a checkpoint every
// 10 events, and a change of the GPUs held every changeEvery events (spot in two zones and
// on-demand in turn, 1 to 8 GPUs). Each event goes through thinning as the job's does, and
// each point carries the running GPU-hours a meter counting every held GPU would have.
func longTimeline(n, changeEvery int, thinning func([]training.TimelinePoint) []training.TimelinePoint) (kept []training.TimelinePoint, meter float64, end time.Time, longest int) {
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	keys := []string{"sim/z-a/A100-40(spot)", "sim/z-b/A100-40(spot)", "sim/z-a/A100-40(on-demand)"}
	gpus := map[string]int{keys[0]: 4}
	last := t0
	for i := 0; i < n; i++ {
		now := t0.Add(time.Duration(i) * time.Minute)
		for _, g := range gpus {
			meter += float64(g) * now.Sub(last).Hours()
		}
		last = now
		event := "progress"
		switch {
		case i > 0 && i%changeEvery == 0:
			gpus = map[string]int{keys[i%3]: 1 + i%8}
			if i%2 == 0 {
				gpus[keys[(i+1)%3]] = 2
			}
			event = fmt.Sprintf("plan %d", i)
		case i%10 == 0:
			event = fmt.Sprintf("checkpoint %d durable", i)
		}
		held := map[string]int{}
		for k, g := range gpus {
			held[k] = g
		}
		kept = append(kept, training.TimelinePoint{At: now, Iteration: int64(i), CostUSD: meter * 2, GPUHours: meter, GPUs: held, Event: event})
		if len(kept) > maxTimeline {
			kept = thinning(kept)
		}
		longest = max(longest, len(kept))
		end = now
	}
	return kept, meter, end, longest
}

func thinNew(ps []training.TimelinePoint) []training.TimelinePoint {
	return thinKeepingHoldings(ps, maxTimeline)
}

// A long job's timeline stays bounded and still accounts for every GPU-hour the job held:
// thinning keeps every point where the held GPUs changed, so the GPUs it shows over time
// add up to the meter's GPU-hours exactly, and the last point carries the meter's total.
// The thinning of before (halving the older half whatever it held, then cutting the oldest
// points) lost most of them.
func TestTheThinnedTimelineAccountsForEveryGPUHour(t *testing.T) {
	for _, n := range []int{501, 5000, 20000} {
		kept, meter, end, longest := longTimeline(n, 97, thinNew)
		assert.LessOrEqual(t, longest, maxTimeline, "%d events", n)
		assert.Equal(t, time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC), kept[0].At, "the first point is kept")
		assert.InDelta(t, meter, heldGPUHours(kept, end), 1e-9*meter, "%d events: GPUs shown over time", n)
		assert.Equal(t, meter, kept[len(kept)-1].GPUHours, "%d events: the running total", n)
		changes := 0
		for i := 1; i < len(kept); i++ {
			if len(kept[i].Event) > 5 && kept[i].Event[:5] == "plan " {
				changes++
			}
		}
		assert.Equal(t, (n-1)/97, changes, "%d events: every change of the GPUs held is kept", n)
	}
	kept, meter, end, _ := longTimeline(5000, 97, thin)
	assert.Less(t, heldGPUHours(kept, end), 0.9*meter, "the old thinning loses GPU-hours")
}

// With more changes of the GPUs held than the bound, the timeline still stays bounded and
// its running totals exact: the GPU-hours between any two points kept are their difference.
func TestATimelineOfMoreHoldingChangesThanTheBoundStaysBoundedAndExact(t *testing.T) {
	kept, meter, _, longest := longTimeline(20000, 2, thinNew)
	assert.LessOrEqual(t, longest, maxTimeline)
	assert.Equal(t, meter, kept[len(kept)-1].GPUHours)
	assert.Equal(t, 0.0, kept[0].GPUHours, "the first point is kept")
	for i := 1; i < len(kept); i++ {
		require.True(t, kept[i].At.After(kept[i-1].At), "in order")
		require.GreaterOrEqual(t, kept[i].GPUHours, kept[i-1].GPUHours, "running totals never fall")
	}
	b, err := json.Marshal(kept)
	require.NoError(t, err)
	assert.Less(t, len(b), 150_000, "the timeline's JSON stays small")
}

// A job of more checkpoints than the timeline holds keeps a bounded timeline that still
// accounts for every GPU-hour its meter counted: the GPUs it shows held over time add up to
// the status's GPU-hours, and its last point carries them. The thinning of before kept every
// named event and then cut the oldest points, the acquisition among them.
func TestTrainingJobTimelineAccountsForEveryGPUHour(t *testing.T) {
	w := newJobWorld()
	w.trainerRun = runsFor(time.Hour)
	env := newJobEnv(t, w, planIn("z-a"))
	const checkpoints = 800
	for i := 1; i <= checkpoints; i++ {
		env.RegisterDelayedCallback(func() { commitStep(env, w, int64(i)) }, 10*time.Second+time.Duration(i)*2*time.Second)
	}
	in := jobInput()
	in.Spec.Iterations = 5000
	env.ExecuteWorkflow(TrainingJob, in)
	st := jobResult(t, env)
	require.Equal(t, training.PhaseCompleted, st.Phase)
	require.Equal(t, checkpoints, st.CheckpointsCommitted)
	require.Greater(t, st.GPUHours, 0.0)
	assert.LessOrEqual(t, len(st.Timeline), maxTimeline)
	assert.Equal(t, st.GPUHours, st.Timeline[len(st.Timeline)-1].GPUHours, "the last point carries the meter's total")
	shown := heldGPUHours(st.Timeline, st.UpdatedAt) * 60 // wall hours at the test cloud's 60x
	assert.InDelta(t, st.GPUHours, shown, 1e-9*st.GPUHours, "the GPUs shown over time are the meter's GPU-hours")
	assert.InDelta(t, 2.0*60, st.GPUHours, 0.01, "two GPUs for an hour of wall time at 60x")
}
