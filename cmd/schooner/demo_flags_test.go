package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/devserver/stack"
)

// A user's trace directory is read before anything starts: a malformed file is named with its
// line, and a directory of GPUs the simulated catalog lacks is refused, for demo and dev.
func TestTraceFlagRefusesABadDirectoryBeforeStarting(t *testing.T) {
	t.Parallel()
	bad := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bad, "us-west-2a_v100_1.json"),
		[]byte("{\"metadata\": {\"gap_seconds\": 60},\n \"data\": [1,, 2]}"), 0o644))
	onlyK80 := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(onlyK80, "us-west-2a_k80_1.json"),
		[]byte(`{"metadata": {"gap_seconds": 60}, "data": [1]}`), 0o644))

	for _, c := range []struct {
		dir  string
		want []string
	}{
		{bad, []string{"--trace", "us-west-2a_v100_1.json", "line 2"}},
		{onlyK80, []string{"--trace", "no trace of a GPU the simulated catalog has", "k80 x1"}},
		{filepath.Join(bad, "missing"), []string{"--trace", "no such file"}},
	} {
		for _, args := range [][]string{
			{"--trace", c.dir, "--headless", "--data-dir", t.TempDir()},
		} {
			_, err := executeFresh(newDemoCommand, args...)
			require.Error(t, err, c.dir)
			for _, w := range c.want {
				assert.ErrorContains(t, err, w)
			}
			_, err = executeFresh(newDevCommand, append([]string{"--headless"}, args[:2]...)...)
			require.Error(t, err, c.dir)
			assert.ErrorContains(t, err, c.want[1])
		}
	}
}

func TestTraceFlagNamesWhatItLeavesOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := []byte(`{"metadata": {"gap_seconds": 60}, "data": [1, 0, 2]}`)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "us-west-2a_v100_1.json"), good, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "us-west-2a_k80_1.json"), good, 0o644))
	var out bytes.Buffer
	require.NoError(t, checkTraceDir(stack.Options{TraceDir: dir}, &out))
	assert.Contains(t, out.String(), "spot traces: 1 offering replays "+dir)
	assert.Contains(t, out.String(), "left out: "+filepath.Join(dir, "us-west-2a_k80_1.json"))
}

// When the demo's own wall-clock limit runs out, it says so, not "context deadline exceeded",
// which reads like the job's deadline.
func TestDemoTimeoutSaysItIsTheDemosLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole stack")
	}
	t.Parallel()
	dir := t.TempDir()
	_, err := executeFresh(newDemoCommand, "--headless", "--timeout", "3s", "--data-dir", dir, "--out", filepath.Join(dir, "out"))
	require.Error(t, err)
	assert.ErrorContains(t, err, "the demo's --timeout of 3s (wall time) ran out before the job finished")
	assert.NotContains(t, err.Error(), "context deadline exceeded")
}

// A demo's --timeout of zero or less is refused before the stack starts (it started the
// stack, then failed with "context deadline exceeded").
func TestDemoTimeoutMustBePositive(t *testing.T) {
	t.Parallel()
	for _, cmd := range []func(*globals) *cobra.Command{newDemoCommand, newDemoServeCommand} {
		for _, v := range []string{"0s", "-1s"} {
			_, err := executeFresh(cmd, "--headless", "--timeout", v, "--data-dir", t.TempDir())
			assert.ErrorContains(t, err, "invalid --timeout "+v+": must be positive")
		}
	}
}

func TestTraceStartMustNotBeNegative(t *testing.T) {
	t.Parallel()
	err := checkTraceDir(stack.Options{TraceStart: -time.Hour}, io.Discard)
	require.ErrorContains(t, err, "invalid --trace-start -1h0m0s: must not be negative")
}

// SCHOONER_TRACE and SCHOONER_TRACE_START give --trace and --trace-start their defaults (a
// flag given still wins), and a malformed SCHOONER_TRACE_START is refused before anything
// starts.
func TestTraceFlagsTakeTheirDefaultsFromTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "us-west-2a_v100_1.json"),
		[]byte(`{"metadata": {"gap_seconds": 60}, "data": [1, 0, 2]}`), 0o644))
	t.Setenv("SCHOONER_TRACE", dir)
	t.Setenv("SCHOONER_TRACE_START", "36h")
	for _, cmd := range []func(*globals) *cobra.Command{newDemoCommand, newDevCommand} {
		c := cmd(&globals{})
		assert.Equal(t, dir, c.Flags().Lookup("trace").DefValue)
		assert.Equal(t, "36h0m0s", c.Flags().Lookup("trace-start").DefValue)
	}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	var o stack.Options
	addTraceFlag(fs, &o)
	require.NoError(t, fs.Parse([]string{"--trace-start", "2h"}))
	assert.Equal(t, dir, o.TraceDir)
	assert.Equal(t, 2*time.Hour, o.TraceStart, "the flag wins")
	var out bytes.Buffer
	require.NoError(t, checkTraceDir(o, &out))
	assert.Contains(t, out.String(), "spot traces: 1 offering replays "+dir)

	t.Setenv("SCHOONER_TRACE_START", "a day")
	err := checkTraceDir(stack.Options{}, io.Discard)
	require.ErrorContains(t, err, `invalid SCHOONER_TRACE_START "a day"`)
}
