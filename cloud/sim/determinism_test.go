package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
)

// script drives a market through a simulated day of requests against the default
// stochastic capacity and returns its event log and total cost.
func script(t *testing.T, seed int64) ([]cloud.Event, float64) {
	t.Helper()
	m := newMarket(t, Config{Seed: seed, Zones: []string{"us-east-1a", "us-west-2b", "us-central1-a", "europe-west4-a"}})
	wants := []cloud.CreateRequest{
		spotReq("us-east-1a", "p3.2xlarge", 6),
		spotReq("us-west-2b", "g5.xlarge", 10),
		spotReq("us-central1-a", "a2-highgpu-1g", 4),
		spotReq("europe-west4-a", "n1-standard-8+nvidia-tesla-t4:1", 8),
		{JobID: "od", Zone: "us-east-1a", InstanceType: "g4dn.xlarge", Capacity: cloud.OnDemand, Count: 2},
	}
	for hour := range 24 {
		m.AdvanceTo(DefaultStart.Add(time.Duration(hour) * time.Hour))
		for _, req := range wants {
			// Top each job up to its size; capacity errors are part of the story.
			live, err := m.List(ctx, map[string]string{cloud.JobTag: req.JobID})
			require.NoError(t, err)
			if missing := req.Count - len(live); missing > 0 {
				r := req
				r.Count = missing
				_, _ = m.Create(ctx, r)
			}
		}
		if hour%6 == 5 {
			live, _ := m.List(ctx, map[string]string{cloud.JobTag: "job-1"})
			if len(live) > 0 {
				require.NoError(t, m.Terminate(ctx, []string{live[0].ID}))
			}
		}
	}
	m.AdvanceTo(DefaultStart.Add(24 * time.Hour))
	return m.EventsSince(0), m.TotalCost()
}

func TestSameSeedSameHistory(t *testing.T) {
	a, costA := script(t, 42)
	b, costB := script(t, 42)
	require.NotEmpty(t, a)
	assert.Equal(t, a, b)
	assert.Equal(t, costA, costB)
	assert.NotEmpty(t, ofKind(a, cloud.EventNotice), "a day of stochastic capacity preempts something")
	assert.NotEmpty(t, ofKind(a, cloud.EventPreempted))
	for i, e := range a {
		assert.Equal(t, int64(i+1), e.Seq)
		if i > 0 {
			assert.False(t, e.Time.Before(a[i-1].Time), "events in time order")
		}
	}

	c, _ := script(t, 43)
	assert.NotEqual(t, a, c, "another seed tells another story")
}

func TestOnOffModelIsSeededAndAlternates(t *testing.T) {
	sample := func(seed int64) []int {
		m := newMarket(t, Config{Seed: seed, Zones: []string{"us-east-2b"}, InstanceTypes: []string{"g5.xlarge"}})
		var levels []int
		for minute := range 24 * 60 {
			m.AdvanceTo(DefaultStart.Add(time.Duration(minute) * time.Minute))
			level, _, _ := m.SpotCapacity("us-east-2b", "g5.xlarge")
			levels = append(levels, level)
		}
		return levels
	}
	for seed := range int64(5) {
		a := sample(seed)
		assert.Equal(t, a, sample(seed), "seed %d is reproducible", seed)
		lo, hi := a[0], a[0]
		for _, l := range a {
			lo, hi = min(lo, l), max(hi, l)
		}
		assert.Less(t, lo, hi, "seed %d: a simulated day has both plenty and shortage", seed)
	}
	assert.NotEqual(t, sample(1), sample(2))
}

func TestDefaultOnOffRanges(t *testing.T) {
	for seed := range int64(50) {
		for _, gpus := range []int{1, 4, 8} {
			m := DefaultOnOff(stream(seed, "test"), gpus)
			require.NoError(t, m.validate())
			assert.GreaterOrEqual(t, m.MeanUp, time.Hour)
			assert.LessOrEqual(t, m.MeanUp, 6*time.Hour)
			assert.GreaterOrEqual(t, m.MeanDown, 5*time.Minute)
			assert.LessOrEqual(t, m.MeanDown, time.Hour)
			assert.GreaterOrEqual(t, m.Level, 1)
			assert.LessOrEqual(t, m.Level*gpus, 48+gpus)
			assert.Less(t, m.DownLevel, max(m.Level, 2))
		}
	}
}

func TestExplicitOnOffModel(t *testing.T) {
	key := Key{Zone: "us-east-1a", InstanceType: "p3.2xlarge"}
	m := newMarket(t, Config{Seed: 3, Zones: []string{key.Zone}, InstanceTypes: []string{key.InstanceType},
		Capacity: map[Key]Capacity{key: {OnOff: &OnOff{MeanUp: 30 * time.Minute, MeanDown: 10 * time.Minute, Level: 7, DownLevel: 2}}}})
	seen := map[int]bool{}
	for range 48 * 60 {
		m.Advance(time.Minute)
		level, _, _ := m.SpotCapacity(key.Zone, key.InstanceType)
		seen[level] = true
	}
	assert.Equal(t, map[int]bool{7: true, 2: true}, seen)
}
