package agent

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
)

// pythonDir is the Python client's project, relative to this package.
const pythonDir = "../../trainer/python"

// python3 finds the interpreter; the Python client is part of what this package ships, so a
// machine without one fails the test rather than skipping it.
func python3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to test the Python checkpoint client (trainer/python): %v", err)
	}
	return p
}

func runPython(t *testing.T, sock string, args ...string) string {
	t.Helper()
	dir, err := filepath.Abs(pythonDir)
	require.NoError(t, err)
	cmd := exec.Command(python3(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SCHOONER_CKPT_SOCKET="+sock, "PYTHONPATH="+dir, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "python3 %v:\n%s", args, out)
	return string(out)
}

// TestPythonClient runs the Python package's unit tests against a real agent.
func TestPythonClient(t *testing.T) {
	r := startAgent(t, testOptions(t))
	out := runPython(t, r.sock, "-m", "unittest", "discover", "-s", "tests", "-t", ".", "-v")
	t.Log(out)
	assert.Regexp(t, `test_save_wait_load_is_byte_exact .*\.\.\. ok`, out, "the agent tests ran rather than skipped")
}

// TestPythonSavesWhatGoReads: a step saved by the Python client restores through the Go client
// with the same bytes, so both sides lay tensors out alike.
func TestPythonSavesWhatGoReads(t *testing.T) {
	r := startAgent(t, testOptions(t))
	runPython(t, r.sock, "-m", "tests.fixture_save")
	c := r.dial(t, 0, plan1())
	res, err := c.Load(context.Background(), LoadRequest{Step: 42})
	require.NoError(t, err)
	assert.Equal(t, "python", res.Extra["from"])
	u8 := make([]byte, 1000)
	for i := range u8 {
		u8[i] = byte(i % 251)
	}
	f32 := make([]byte, 0, 24)
	for _, v := range []float32{0.5, -1.0, 2.25, 3.0, 1e-3, -7.5} {
		f32 = binary.LittleEndian.AppendUint32(f32, math.Float32bits(v))
	}
	i64 := binary.LittleEndian.AppendUint64(nil, math.MaxUint64) // -1
	i64 = binary.LittleEndian.AppendUint64(i64, 1<<40)
	requireTensors(t, []checkpoint.Tensor{
		{Name: "fixture.u8", Layer: checkpoint.NoLayer, DType: checkpoint.Uint8, Shape: []int64{1000}, Data: u8},
		{Name: "layers.2.f32", Layer: 2, DType: checkpoint.Float32, Shape: []int64{2, 3}, Data: f32},
		{Name: "layers.2.i64", Layer: 2, DType: checkpoint.Int64, Shape: []int64{2}, Data: i64},
	}, res.Tensors)
}
