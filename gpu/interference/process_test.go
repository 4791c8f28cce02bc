package interference_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gi "github.com/schooner-ml/schooner/gpu/interference"
	"github.com/schooner-ml/schooner/interference"
)

// pythonWithTorch is an interpreter that imports torch (CI installs Debian's python3-torch).
func pythonWithTorch(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import torch").Run() == nil {
			return p
		}
	}
	t.Skip("needs python3 with torch (Debian python3-torch) for the interference executor")
	return ""
}

// TestTheProcessExecutorRunsAStudyInItsCPUTestMode runs the Python executor for real, on the
// CPU with the tiny workloads: every answer crosses the JSON-lines protocol into a study that
// validates and analyses; the mechanisms a CPU lacks come back unavailable with the reason.
func TestTheProcessExecutorRunsAStudyInItsCPUTestMode(t *testing.T) {
	py := pythonWithTorch(t)
	dir, err := filepath.Abs(filepath.Join("..", "..", "trainer", "python"))
	require.NoError(t, err)
	x := &gi.ProcessExecutor{Command: func(args []string) (*exec.Cmd, error) {
		c := exec.Command(py, append([]string{"-m", gi.ExecutorModule}, args...)...)
		c.Env = append(os.Environ(), "PYTHONPATH="+dir, "SCHOONER_NCU="+filepath.Join(t.TempDir(), "no-ncu-here"))
		return c, nil
	}, Args: []string{"--scale", "tiny", "--allow-cpu"}, Stderr: os.Stderr}
	defer x.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req := interference.StudyRequest{
		Pairs: []interference.Pair{{LC: "decode-chain", BE: "gemm"}, {LC: "cnn-infer", BE: "copy"}},
		Mechanisms: []interference.Mechanism{{Kind: interference.Sequential}, {Kind: interference.TimeSlicing},
			{Kind: interference.Streams}, {Kind: interference.MPS, Setting: 50}, {Kind: interference.MIG}},
		Requests: 10, Warmup: 2, ThinkMs: 0.5, Repeats: 1, Counters: true,
	}
	st, err := gi.RunStudy(ctx, x, req, nil)
	require.NoError(t, err)
	require.Len(t, st.Counters, 4, "each workload's counters, or why none")
	for _, c := range st.Counters {
		assert.Contains(t, c.Unavailable, "running ncu", c.Workload)
	}
	assert.False(t, st.Simulated, "measured, not modelled")
	assert.Contains(t, st.GPU.Model, "CPU (a test run, not a GPU)")
	assert.Equal(t, "tiny", st.GPU.Scale, "the workload scale, which a resumed study must share")
	assert.Len(t, st.Runs, 4+2*2, "four workloads alone, two pairs under sequential and time-slicing")
	reasons := map[interference.MechanismKind]string{}
	for _, u := range st.Unavailable {
		reasons[u.Mechanism.Kind] = u.Reason
	}
	assert.Equal(t, "streams needs a CUDA GPU", reasons[interference.Streams])
	assert.Equal(t, "mps needs a CUDA GPU", reasons[interference.MPS])
	assert.Contains(t, reasons[interference.MIG], "never changes a GPU's MIG setting")
	rows, err := gi.Analyze(st)
	require.NoError(t, err)
	require.Len(t, rows, 4)
	for _, r := range rows {
		assert.Positive(t, r.LCP50x, "%s under %s", r.Pair, r.Mechanism)
		assert.Positive(t, r.BEFraction, "%s under %s", r.Pair, r.Mechanism)
	}

	// The MPS rows' baseline, the latency-critical side alone in a child process of its own,
	// runs wherever a child can (MPS itself needs a GPU, so the CPU study above has none).
	own := interference.Mechanism{Kind: interference.DedicatedProcess}
	inChild, err := x.Shared(ctx, interference.Pair{LC: "cnn-infer"}, own, req)
	require.NoError(t, err)
	assert.Equal(t, interference.Step{Pair: interference.Pair{LC: "cnn-infer"}, Mechanism: own}, inChild.Step())
	require.NotNil(t, inChild.LC)
	assert.Nil(t, inChild.BE)
	assert.Equal(t, 10, inChild.LC.Requests)
	assert.Positive(t, inChild.LC.P50Ms)

	// A request the executor refuses is an error naming it, and the executor goes on.
	_, err = x.Alone(ctx, interference.Workload{Name: "nope"}, req)
	require.ErrorContains(t, err, "workload 'nope' is not one of")
	_, err = x.GPU(ctx)
	require.NoError(t, err)
}
