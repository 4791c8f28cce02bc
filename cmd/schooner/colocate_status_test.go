package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/colocation"
)

// `colocate status --json` prints {"live": heartbeat, "status": workflow status}, "live" only
// while the pair runs, and the human view adds the heartbeat's progress line only then.
func TestColocateStatusViews(t *testing.T) {
	st := colocation.WorkflowStatus{Phase: "running", Node: "n1", Placement: "complementary kernels",
		Started: time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)}
	live := colocation.Status{Elapsed: 3 * time.Second, SMs: 132, HPKernels: 10, BEKernels: 4, Slowdown: 1.05, BEState: "running"}
	for _, c := range []struct {
		name    string
		view    colocationView
		want    map[string]any
		running bool
	}{
		{"running", colocationView{Status: st, Live: &live}, map[string]any{"status": st, "live": live}, true},
		{"ended", colocationView{Status: st}, map[string]any{"status": st}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got, want bytes.Buffer
			require.NoError(t, printJSON(&got, c.view))
			require.NoError(t, printJSON(&want, c.want))
			assert.Equal(t, want.String(), got.String())

			var human bytes.Buffer
			require.NoError(t, printColocationStatus(&human, c.view))
			assert.Contains(t, human.String(), "phase: running on node n1\nplacement: complementary kernels\n")
			if c.running {
				assert.Contains(t, human.String(), progressLine(live))
			} else {
				assert.NotContains(t, human.String(), progressLine(live))
			}
		})
	}
}
