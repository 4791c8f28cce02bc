package agent

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint/store"
)

// stallingStore stalls every .data upload forever after half its bytes.
type stallingStore struct{ store.Store }

func (s stallingStore) Put(ctx context.Context, key string, r io.ReaderAt, size int64, crc uint32) error {
	if strings.HasSuffix(key, ".data") {
		r = stallAfter{r: r, at: size / 2}
	}
	return s.Store.Put(ctx, key, r, size, crc)
}

type stallAfter struct {
	r  io.ReaderAt
	at int64
}

func (s stallAfter) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.at {
		select {} // killed here
	}
	return s.r.ReadAt(p[:min(int64(len(p)), s.at-off)], off)
}

// Environment of a child agent: the crash test re-executes the test binary with these set, and
// TestMain runs an agent instead of the tests.
const (
	childDirEnv    = "SCHOONER_AGENT_CHILD_DIR"
	childSocketEnv = "SCHOONER_AGENT_CHILD_SOCKET"
	childShmEnv    = "SCHOONER_AGENT_CHILD_SHM"
	// childStallEnv, when set, is a directory store the child uploads to (both mode), whose
	// data uploads stall forever halfway: a kill then leaves a partial temp file behind.
	childStallEnv = "SCHOONER_AGENT_CHILD_STALL_STORE"
)

// childAgent is an agent serving in a child process (the test binary, see TestMain), for tests
// that kill it.
type childAgent struct {
	cmd    *exec.Cmd
	sock   string
	exited chan struct{} // closed once the process is gone
}

// startChildAgent starts a child agent on dir, shm and sock, with env (NAME=value) added to
// its environment.
func startChildAgent(t *testing.T, dir, shm, sock string, env ...string) *childAgent {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childDirEnv+"="+dir, childSocketEnv+"="+sock, childShmEnv+"="+shm), env...)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	c := &childAgent{cmd: cmd, sock: sock, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(c.exited) }()
	return c
}

// kill sends the child SIGKILL without waiting for it to go.
func (c *childAgent) kill() error { return c.cmd.Process.Kill() }

// stop kills the child and waits until it is gone.
func (c *childAgent) stop() {
	_ = c.kill()
	<-c.exited
}

// dial waits for the child to listen and connects to it.
func (c *childAgent) dial(ctx context.Context, t *testing.T) *Client {
	t.Helper()
	var client *Client
	eventually(t, 20*time.Second, func() bool {
		var err error
		client, err = Dial(ctx, c.sock)
		return err == nil
	}, "child agent to listen on %s", c.sock)
	return client
}

func TestMain(m *testing.M) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		runChildAgent(dir, os.Getenv(childSocketEnv), os.Getenv(childShmEnv))
		return
	}
	os.Exit(m.Run())
}

// runChildAgent serves an agent until it is killed.
func runChildAgent(dir, sock, shm string) {
	opts := Options{Dir: dir, ShmDir: shm, Mode: ModeLocal, Writers: 2, ChunkSize: 256 << 10, StagingBytes: 1 << 20,
		Logger: zerolog.New(os.Stderr).Level(zerolog.WarnLevel)}
	if root := os.Getenv(childStallEnv); root != "" {
		st, err := store.NewDir(root)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child agent:", err)
			os.Exit(2)
		}
		opts.Mode, opts.Store = ModeBoth, stallingStore{st}
	}
	a, err := New(opts)
	if err == nil {
		err = a.ListenAndServe(sock)
	}
	fmt.Fprintln(os.Stderr, "child agent:", err)
	os.Exit(2)
}
