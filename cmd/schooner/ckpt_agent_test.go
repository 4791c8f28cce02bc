package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/agent"
)

// TestCkptAgentCommandServesAndStopsGracefully runs `schooner ckpt agent` with a file store,
// saves through it until the step is durable in the store, then cancels it: it returns cleanly
// and removes its socket.
func TestCkptAgentCommandServesAndStopsGracefully(t *testing.T) {
	dir := t.TempDir()
	sockDir, err := os.MkdirTemp("", "sck")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "a.sock")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"ckpt", "agent", "--dir", filepath.Join(dir, "ckpt"), "--socket", sock,
		"--store", "file://" + filepath.Join(dir, "store"), "--shm-dir", filepath.Join(dir, "shm"), "--direct-io=false", "--staging-bytes", "1048576"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	var c *agent.Client
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err = agent.Dial(ctx, sock); err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "the agent never listened: %v\n%s", err, out.String())
		time.Sleep(10 * time.Millisecond)
	}
	defer c.Close()
	_, err = c.Hello(ctx, 0, checkpoint.PlanInfo{World: 1})
	require.NoError(t, err)
	shard := checkpoint.Shard{Tensors: []checkpoint.Tensor{{Name: "w", Layer: 0, DType: checkpoint.Uint8, Shape: []int64{3}, Data: []byte{1, 2, 3}}}}
	_, err = c.Save(ctx, 5, shard, nil, false)
	require.NoError(t, err)
	step, err := c.Wait(ctx, 5, agent.DurableRemote)
	require.NoError(t, err)
	assert.Equal(t, int64(5), step)

	cancel()
	require.NoError(t, <-done)
	assert.NoFileExists(t, sock)
	assert.Contains(t, out.String(), "checkpoint agent listening")
}
