package simgpu

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/colocation"
)

func rowOf(t *testing.T, rows []Row, m Mechanism) Row {
	t.Helper()
	for _, r := range rows {
		if r.Mechanism == m {
			return r
		}
	}
	t.Fatalf("no row for %s", m)
	return Row{}
}

// With BE kernels of 100 µs (what the splitter makes of a long GEMM), the admission rule and
// the supervisor keep the HP tail within the 10% target while the BE side keeps most of the
// time the HP side leaves; free streams, prioritised or not, ruin the HP side.
func TestSchoonerKeepsTheHPTailWithinTargetBesideShortBEKernels(t *testing.T) {
	rows, err := Compare(H200Probe(100 * time.Microsecond))
	require.NoError(t, err)
	s, p, st := rowOf(t, rows, Schooner), rowOf(t, rows, Priority), rowOf(t, rows, Streams)
	require.Greater(t, rowOf(t, rows, Dedicated).Requests, 300)

	require.LessOrEqual(t, s.P99Ratio, 1.10, "HP p99 against dedicated")
	require.Less(t, s.P50Ratio, 1.25)
	require.Greater(t, p.P99Ratio, 2*s.P99Ratio, "priority streams alone")
	require.Greater(t, st.P99Ratio, p.P99Ratio, "equal priority is worse still")
	// The HP side is busy about 27% of the time and the BE kernels take every SM, so the rule
	// can give the BE side only the idle time: most of it.
	require.Greater(t, s.BEShare, 0.6)
	require.Equal(t, colocation.Running, s.Final.State)
	require.Empty(t, s.Changes)
}

// A BE GEMM of 1.6 ms cannot be gated finely: one kernel always goes when HP is idle, an HP
// request arriving behind it waits, the supervisor sees the target missed at the minimum
// budget and pauses the BE side, and the HP side is still far better off than with priority.
func TestSchoonerThrottlesAnUnsplittableBESide(t *testing.T) {
	sc := H200Probe(1600 * time.Microsecond)
	sc.Params.Cooldown = 200 * time.Millisecond
	sc.Duration = 2 * time.Second
	rows, err := Compare(sc)
	require.NoError(t, err)
	s, p := rowOf(t, rows, Schooner), rowOf(t, rows, Priority)
	require.NotEmpty(t, s.Changes)
	require.Contains(t, s.Changes[0], "BE paused")
	require.Equal(t, colocation.Evicted, s.Final.State, "three throttles in a row: %v", s.Changes)
	require.Less(t, s.P99Ratio, p.P99Ratio/5)
	require.Less(t, s.BEShare, p.BEShare)
}

func TestRunIsDeterministicForASeedAndRefusesBadScenarios(t *testing.T) {
	sc := H200Probe(100 * time.Microsecond)
	sc.Duration = 200 * time.Millisecond
	a, err := Run(sc, Schooner)
	require.NoError(t, err)
	b, err := Run(sc, Schooner)
	require.NoError(t, err)
	require.Equal(t, a, b)
	sc.Seed = 2
	c, err := Run(sc, Schooner)
	require.NoError(t, err)
	require.NotEqual(t, a.HPP99, c.HPP99)

	sc.SMs = 0
	_, err = Run(sc, Schooner)
	require.ErrorContains(t, err, "sms 0")
	_, err = Run(H200Probe(time.Millisecond), "mps")
	require.ErrorContains(t, err, `"mps"`)
	bad := H200Probe(time.Millisecond)
	bad.Params.SMShare = 2
	_, err = Run(bad, Schooner)
	require.ErrorContains(t, err, "sm_share")
}

func TestAloneCountsWaves(t *testing.T) {
	k := Kernel{Blocks: 133, BlockTime: time.Microsecond}
	require.Equal(t, 2*time.Microsecond, k.Alone(132))
	require.Equal(t, time.Microsecond, k.Alone(133))
}
