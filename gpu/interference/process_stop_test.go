package interference_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gi "github.com/schooner-ml/schooner/gpu/interference"
	"github.com/schooner-ml/schooner/interference"
)

// stoppableExecutor is a stand-in for the Python executor: at its first request it starts a
// child (as a run starts its best-effort side) and waits; on SIGTERM it records that it
// cleaned up. It never answers, so only a stop ends the call.
const stoppableExecutor = `
trap 'echo cleaned > "$DIR/cleaned"; exit 143' TERM
read -r line
sleep 600 & echo $! > "$DIR/child"
wait
`

// TestACancelledRunStopsTheExecutorAndItsChildren: a study stopped mid-run (its caller's
// time is up) must let the executor clean up (SIGTERM: an MPS daemon is shut down only by the
// executor) and must leave no child of the run behind on the GPU, where it would skew the
// runs of a study continued on the same machine. Killing the executor alone did neither, and
// a child that kept the executor's output open kept the call waiting.
func TestACancelledRunStopsTheExecutorAndItsChildren(t *testing.T) {
	dir := t.TempDir()
	x := &gi.ProcessExecutor{Command: func(args []string) (*exec.Cmd, error) {
		c := exec.Command("bash", "-c", stoppableExecutor)
		c.Env = append(os.Environ(), "DIR="+dir)
		return c, nil
	}, Stderr: os.Stderr}
	defer x.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		assert.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(dir, "child")); return err == nil },
			10*time.Second, 10*time.Millisecond)
		cancel()
	}()
	returned := make(chan error, 1)
	go func() {
		_, err := x.Alone(ctx, interference.Workload{Name: "gemm"}, interference.StudyRequest{})
		returned <- err
	}()
	select {
	case err := <-returned:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(20 * time.Second):
		if pid, err := childPid(dir); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL) // so that the call, and the test, can end
		}
		t.Fatal("the stopped run did not return: a child of the executor outlived it (and held its output open)")
	}

	cleaned, err := os.ReadFile(filepath.Join(dir, "cleaned"))
	require.NoError(t, err, "the executor was killed without its SIGTERM, so it could not clean up")
	assert.Equal(t, "cleaned", strings.TrimSpace(string(cleaned)))
	pid, err := childPid(dir)
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return syscall.Kill(pid, 0) == syscall.ESRCH }, 5*time.Second, 20*time.Millisecond,
		"the run's child %d outlived the stopped study", pid)
}

// childPid is the pid stoppableExecutor wrote for its child.
func childPid(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "child"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}
