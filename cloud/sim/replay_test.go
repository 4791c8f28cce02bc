package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
)

// TestReplaySkyPilotTraces replays real p3.2xlarge availability from SkyPilot's spot-traces
// tick by tick and checks that notices come exactly at the ticks where the trace falls below
// what is held, preemptions exactly one AWS notice period later, and nothing else ever.
func TestReplaySkyPilotTraces(t *testing.T) {
	for _, tc := range []struct {
		file, zone string
	}{
		{"16-node/aws-08-27-2023/us-west-2c_v100_1.json", "us-west-2c"},
		{"16-node/aws-08-27-2023/us-east-2b_v100_1.json", "us-east-2b"},
		{"16-node/aws-08-27-2023/us-west-2a_v100_1.json", "us-west-2a"},
		{"1-node/aws-02-15-2023/us-east-1f_v100_1.json", "us-east-1f"},
	} {
		for _, topUp := range []bool{false, true} {
			name := tc.zone + "/hold"
			if topUp {
				name = tc.zone + "/top-up"
			}
			t.Run(name, func(t *testing.T) {
				tr, err := LoadTrace(sharedTraces(t, tc.file))
				require.NoError(t, err)
				replay(t, tr, tc.zone, topUp)
			})
		}
	}
}

// replay holds what the first tick with capacity allows and, with topUp, refills to the
// trace's level at every tick.
func replay(t *testing.T, tr *Trace, zone string, topUp bool) {
	const typ = "p3.2xlarge"
	m := newMarket(t, oneOffering(zone, typ, Capacity{Trace: tr}))
	notice := m.Params("aws").NoticePeriod
	require.Greater(t, tr.Gap, notice, "the check below assumes preemptions land between ticks")
	tick := func(k int) time.Time { return DefaultStart.Add(time.Duration(k) * tr.Gap) }

	k0 := 0
	for k0 < len(tr.Steps) && tr.Steps[k0].Count == 0 {
		k0++
	}
	require.Less(t, k0, len(tr.Steps), "the trace never has capacity")
	m.AdvanceTo(tick(k0))
	got, err := m.Create(ctx, spotReq(zone, typ, tr.Steps[k0].Count))
	require.NoError(t, err)
	held := len(got)
	require.Equal(t, tr.Steps[k0].Count, held)

	seq := m.LastSeq()
	drops, noticesSeen := 0, 0
	for k := k0 + 1; k < len(tr.Steps); k++ {
		level := tr.Steps[k].Count

		m.AdvanceTo(tick(k))
		ev := m.EventsSince(seq)
		seq = m.LastSeq()
		require.Empty(t, ofKind(ev, cloud.EventPreempted), "tick %d: preemption between ticks", k)
		notices := ofKind(ev, cloud.EventNotice)
		want := max(0, held-level)
		require.Len(t, notices, want, "tick %d: held %d, trace %d", k, held, level)
		noticed := map[string]bool{}
		for _, e := range notices {
			require.Equal(t, tick(k), e.Time, "tick %d: notice off the tick", k)
			require.Equal(t, tick(k).Add(notice), e.Instance.Interruption.Deadline)
			noticed[e.Instance.ID] = true
		}
		held -= want
		drops += want
		noticesSeen += len(notices)

		if topUp {
			free := level - held
			got, err := m.Create(ctx, spotReq(zone, typ, free+1))
			require.ErrorIs(t, err, cloud.ErrInsufficientCapacity, "tick %d: asked one more than free", k)
			require.Len(t, got, free, "tick %d", k)
			held += free
		}

		m.AdvanceTo(tick(k).Add(notice))
		ev = m.EventsSince(seq)
		seq = m.LastSeq()
		require.Empty(t, ofKind(ev, cloud.EventNotice), "tick %d: notice between ticks", k)
		preempted := ofKind(ev, cloud.EventPreempted)
		require.Len(t, preempted, want, "tick %d", k)
		for _, e := range preempted {
			require.Equal(t, tick(k).Add(notice), e.Time)
			require.True(t, noticed[e.Instance.ID], "tick %d: preempted %s without a notice", k, e.Instance.ID)
		}
	}
	listed, err := m.List(ctx, nil)
	require.NoError(t, err)
	assert.Len(t, listed, held)
	assert.Equal(t, drops, noticesSeen)
	assert.Positive(t, drops, "the trace should have preempted something")
	t.Logf("%d ticks from %d, %d preemptions", len(tr.Steps)-k0, k0, drops)
}
