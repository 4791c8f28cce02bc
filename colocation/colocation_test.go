package colocation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/interference"
)

func TestParamsValidateNamesEveryBadField(t *testing.T) {
	require.NoError(t, DefaultParams().Validate())
	p := DefaultParams()
	p.TargetSlowdown, p.MinBudget, p.SMShare, p.Window, p.ThrottleAfter, p.Cooldown, p.EvictAfter = 1, 0, 1.5, 0, 0, 0, 0
	p.IdleBudget = -time.Millisecond
	err := p.Validate()
	for _, field := range []string{"target_slowdown", "min_budget", "idle_budget", "sm_share", "window", "throttle_after", "cooldown", "evict_after"} {
		require.ErrorContains(t, err, field)
	}
	p = DefaultParams()
	p.Budget = 2 * p.MaxBudget
	require.ErrorContains(t, p.Validate(), "budget")
	p = DefaultParams()
	p.MaxBudget = p.MinBudget / 2
	require.ErrorContains(t, p.Validate(), "max_budget")
}

func TestPairDefaultsAndValidation(t *testing.T) {
	p := Pair{HP: Program{Command: []string{"serve"}}, BE: Program{Command: []string{"train"}}}.WithDefaults()
	require.NoError(t, p.Validate())
	require.Equal(t, MPSAuto, p.MPS)
	require.Equal(t, DefaultParams(), p.Params)

	bad := Pair{HP: Program{Command: []string{""}}, MPS: "maybe", BEDelay: -time.Second, SMs: -1, BEThreadPercentage: 101}.WithDefaults()
	err := bad.Validate()
	for _, field := range []string{"hp.command", "be.command", `mps "maybe"`, "be_delay", "sms", "be_thread_percentage 101"} {
		require.ErrorContains(t, err, field)
	}
}

func TestInputNeedsEvidenceOrForce(t *testing.T) {
	pair := Pair{HP: Program{Command: []string{"serve"}}, BE: Program{Command: []string{"train"}}}
	in := Input{Node: "n", Pair: pair}.WithDefaults()
	require.ErrorContains(t, in.Validate(), "study: no interference results")
	in.Force = true
	require.NoError(t, in.Validate())
	require.Equal(t, 30*time.Second, in.Wait)
	in.Study = &interference.Study{Version: 99}
	err := in.Validate()
	require.ErrorContains(t, err, "study: version 99")
	require.ErrorContains(t, err, "kinds:")
}

func TestBoundsAndStatesReadBack(t *testing.T) {
	for _, b := range []Bound{Unknown, Compute, Memory} {
		got, err := ParseBound(b.String())
		require.NoError(t, err)
		require.Equal(t, b, got)
	}
	_, err := ParseBound("io")
	require.ErrorContains(t, err, "io")
	require.Equal(t, "evicted", Evicted.String())
	require.Equal(t, "throttled", Throttled.String())
}
