//go:build unix

package procgroup

import (
	"bufio"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// start runs script in its own process group and returns once it printed its first line
// (its signal handling is set up by then).
func start(t *testing.T, script string) (*exec.Cmd, chan struct{}) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	_, err = bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	return cmd, exited
}

func TestAProgramThatStopsOnSIGTERMIsNotKilled(t *testing.T) {
	cmd, exited := start(t, "echo ready; exec sleep 30")
	assert.False(t, Terminate(cmd.Process.Pid, 10*time.Second, exited))
	<-exited
	assert.Equal(t, "signal: terminated", cmd.ProcessState.String())
}

func TestAProgramThatIgnoresSIGTERMIsKilledAfterTheGrace(t *testing.T) {
	cmd, exited := start(t, "trap '' TERM; echo ready; sleep 30 & wait")
	assert.True(t, Terminate(cmd.Process.Pid, 200*time.Millisecond, exited))
	<-exited
	assert.Equal(t, "signal: killed", cmd.ProcessState.String())
}
