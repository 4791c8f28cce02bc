package servingwf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/serving"
)

// The spec's kv_swap_gib reaches every stage's assignment (the worker's --swap-host-gib), and
// a spec without it leaves swapping off.
func TestKVSwapReachesEveryStage(t *testing.T) {
	w, env := newWorldEnv(t)
	in := deployInput()
	in.Spec.KVSwapGiB = 24
	var stopped serving.Status
	st := runUntilStopped(t, env, in, 2*time.Minute, &stopped)
	assert.Equal(t, serving.PhaseStopped, st.Phase)
	require.Len(t, w.assignments, 2)
	for _, a := range w.assignments {
		assert.Equal(t, 24.0, a.KVSwapGiB, "stage %d", a.Stage)
	}

	w, env = newWorldEnv(t)
	runUntilStopped(t, env, deployInput(), 2*time.Minute, &stopped)
	require.NotEmpty(t, w.assignments)
	assert.Zero(t, w.assignments[0].KVSwapGiB)
}
