package agent

import (
	"fmt"
	"os"
	"testing"

	"github.com/rs/zerolog"
)

// Environment of a child agent: the crash test re-executes the test binary with these set, and
// TestMain runs an agent instead of the tests.
const (
	childDirEnv    = "SCHOONER_AGENT_CHILD_DIR"
	childSocketEnv = "SCHOONER_AGENT_CHILD_SOCKET"
	childShmEnv    = "SCHOONER_AGENT_CHILD_SHM"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		runChildAgent(dir, os.Getenv(childSocketEnv), os.Getenv(childShmEnv))
		return
	}
	os.Exit(m.Run())
}

// runChildAgent serves an agent until it is killed.
func runChildAgent(dir, sock, shm string) {
	a, err := New(Options{Dir: dir, ShmDir: shm, Mode: ModeLocal, Writers: 2, ChunkSize: 256 << 10, StagingBytes: 1 << 20,
		Logger: zerolog.New(os.Stderr).Level(zerolog.WarnLevel)})
	if err == nil {
		err = a.ListenAndServe(sock)
	}
	fmt.Fprintln(os.Stderr, "child agent:", err)
	os.Exit(2)
}
