package agent

import (
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func strconvI(n int64) string { return strconv.FormatInt(n, 10) }

func mkfifo(path string) error { return unix.Mkfifo(path, 0o600) }

// deadPID is the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}
