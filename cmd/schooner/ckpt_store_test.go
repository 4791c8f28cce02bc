package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
)

// ckptTestPlan: three ranks, two pipeline stages over four layers.
var ckptTestPlan = checkpoint.PlanInfo{World: 3, PP: 2, DP: 2, TP: 1,
	Stages: []checkpoint.StageLayers{{First: 0, End: 2}, {First: 2, End: 4}}}

// ckptTestShard holds rank's layer (weights and bias) and, on rank 0, the layer-less step.
func ckptTestShard(rank int, step int64) checkpoint.Shard {
	w := make([]byte, 4*256)
	for i := range w {
		w[i] = byte(int64(i) + step + int64(rank))
	}
	s := checkpoint.Shard{Rank: rank, Tensors: []checkpoint.Tensor{
		{Name: fmt.Sprintf("layers.%d.w", rank), Layer: rank, DType: checkpoint.Float32, Shape: []int64{16, 16}, Data: w},
		{Name: fmt.Sprintf("layers.%d.b", rank), Layer: rank, DType: checkpoint.Float32, Shape: []int64{2}, Data: make([]byte, 8)},
	}}
	if rank == 0 {
		s.Tensors = append(s.Tensors, checkpoint.Tensor{Name: "step", Layer: checkpoint.NoLayer, DType: checkpoint.Int64,
			Shape: []int64{}, Data: binary.LittleEndian.AppendUint64(nil, uint64(step))})
	}
	return s
}

// ckptPopulate uploads steps 10 and 20 (durable) and rank 0 of step 30 (incomplete).
func ckptPopulate(t *testing.T, dir string) {
	t.Helper()
	s, err := store.NewDir(dir)
	require.NoError(t, err)
	r := &checkpoint.Remote{Store: s}
	put := func(rank int, step int64) {
		meta, data, err := checkpoint.EncodeShard(step, ckptTestShard(rank, step), ckptTestPlan, nil, 512)
		require.NoError(t, err)
		_, err = r.PutShard(context.Background(), meta, bytes.NewReader(data))
		require.NoError(t, err)
	}
	for _, step := range []int64{10, 20} {
		for rank := range 3 {
			put(rank, step)
		}
	}
	put(0, 30)
}

// runCkpt runs `schooner ckpt args...` and returns stdout, stderr and the error.
func runCkpt(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := &cobra.Command{Use: "ckpt"}
	addCkptStoreCommands(cmd, &globals{logLevel: "info", logFormat: "console"})
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func TestCkptStoreCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ckptPopulate(t, dir)
	url := "file://" + dir

	out, _, err := runCkpt(t, "ls", "--store", url)
	require.NoError(t, err)
	assert.Regexp(t, `30\s+incomplete \(1 of 3 ranks\)\s+3\s+pp=2 dp=2 tp=1`, out)
	assert.Regexp(t, `20\s+durable\s+3\s+pp=2 dp=2 tp=1\s+3\.\d KiB`, out)
	assert.Contains(t, out, "\n10 ")

	out, _, err = runCkpt(t, "ls", "--store", url, "--json")
	require.NoError(t, err)
	var infos []checkpoint.StepInfo
	require.NoError(t, json.Unmarshal([]byte(out), &infos))
	require.Len(t, infos, 3)
	assert.Equal(t, int64(30), infos[0].Step)
	assert.True(t, infos[1].Durable)

	out, _, err = runCkpt(t, "verify", "--store", url)
	require.NoError(t, err, out)
	assert.Contains(t, out, "step 20 rank 2: OK")
	assert.Contains(t, out, "all 3 shards verified")

	out, _, err = runCkpt(t, "verify", "--store", url, "--all")
	require.NoError(t, err, out)
	assert.Contains(t, out, "step 30: incomplete, 1 of 3 ranks uploaded")
	assert.Contains(t, out, "all 7 shards verified")

	// Rot one byte of step 20's rank 1.
	path := filepath.Join(dir, "step-000000000020", "rank-00001.data")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[100] ^= 0x40
	require.NoError(t, os.WriteFile(path, b, 0o644))

	out, _, err = runCkpt(t, "verify", "--store", url, "--step", "20")
	require.ErrorContains(t, err, "1 of 3 shards failed verification")
	assert.Contains(t, out, "step 20 rank 1: CORRUPT")
	assert.Contains(t, out, "step 20 rank 2: OK", "a corrupt shard does not stop the others being checked")

	to := filepath.Join(t.TempDir(), "restored")
	out, stderr, err := runCkpt(t, "restore", "--store", url, "--to", to)
	require.NoError(t, err, stderr)
	assert.Contains(t, out, "restored step 10")
	assert.Contains(t, stderr, "falling back to step 10")
	assert.Contains(t, stderr, "read step 10 rank 2 (of 3)")
	f, err := os.Open(filepath.Join(to, "step-10.safetensors"))
	require.NoError(t, err)
	tensors, meta, err := checkpoint.ReadSafetensors(f)
	f.Close()
	require.NoError(t, err)
	assert.Len(t, tensors, 7)
	assert.Equal(t, "10", meta["schooner.step"])
	var manifest restoreManifest
	mb, err := os.ReadFile(filepath.Join(to, "step-10.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(mb, &manifest))
	assert.Equal(t, ckptTestPlan, manifest.Plan)
	assert.Len(t, manifest.Shards, 3)
	assert.Equal(t, 2, manifest.Tensors["layers.2.w"])

	_, _, err = runCkpt(t, "restore", "--store", url, "--to", to)
	require.ErrorContains(t, err, "exists; pass --force")
	_, _, err = runCkpt(t, "restore", "--store", url, "--to", to, "--force")
	require.NoError(t, err)

	_, _, err = runCkpt(t, "restore", "--store", url, "--to", to, "--step", "20")
	require.ErrorIs(t, err, checkpoint.ErrCorrupt, "an explicit step does not fall back")

	stageDir := t.TempDir()
	_, _, err = runCkpt(t, "restore", "--store", url, "--to", stageDir, "--step", "10", "--stage", "1", "--pp", "2")
	require.NoError(t, err)
	f, err = os.Open(filepath.Join(stageDir, "step-10.safetensors"))
	require.NoError(t, err)
	tensors, _, err = checkpoint.ReadSafetensors(f)
	f.Close()
	require.NoError(t, err)
	var names []string
	for _, tt := range tensors {
		names = append(names, tt.Name)
	}
	assert.ElementsMatch(t, []string{"layers.2.b", "layers.2.w", "step"}, names, "stage 1 holds layers 2 and 3, and the layer-less tensors")

	_, _, err = runCkpt(t, "restore", "--store", url, "--to", t.TempDir(), "--stage", "5")
	assert.ErrorContains(t, err, "stages 0..1")
}

func TestCkptStoreErrors(t *testing.T) {
	t.Parallel()
	_, _, err := runCkpt(t, "ls")
	assert.ErrorContains(t, err, "--store is required")
	_, _, err = runCkpt(t, "ls", "--store", "ftp://x")
	assert.ErrorContains(t, err, `unsupported scheme "ftp"`)
	_, _, err = runCkpt(t, "restore", "--store", "file://"+t.TempDir())
	assert.ErrorContains(t, err, "--to is required")
	_, _, err = runCkpt(t, "restore", "--store", "file://"+t.TempDir(), "--to", t.TempDir())
	assert.ErrorIs(t, err, checkpoint.ErrNoCheckpoint)
	_, _, err = runCkpt(t, "verify", "--store", "file://"+t.TempDir(), "--all", "--step", "3")
	assert.ErrorContains(t, err, "exclude each other")
	out, _, err := runCkpt(t, "ls", "--store", "file://"+t.TempDir())
	require.NoError(t, err)
	assert.Contains(t, out, "no checkpoints")
	_, _, err = runCkpt(t, "ls", "--store", "local://relative")
	assert.ErrorContains(t, err, "must be absolute")
	// A mistyped directory is not an empty store.
	missing := filepath.Join(t.TempDir(), "no-such-dir")
	for _, cmd := range [][]string{{"ls"}, {"verify", "--step", "3"}, {"restore", "--to", t.TempDir()}} {
		for _, url := range []string{"file://" + missing, "local://" + missing} {
			_, _, err = runCkpt(t, append(cmd, "--store", url)...)
			assert.ErrorContains(t, err, missing+" does not exist", "%v %s", cmd, url)
		}
	}
}

func TestCkptStoreLocalRoot(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	plan := checkpoint.PlanInfo{World: 1, PP: 1, DP: 1, TP: 1}
	e, err := checkpoint.Open(checkpoint.Options{Dir: checkpoint.RankDir(root, 0), ChunkSize: 4096, StagingBytes: 4 * 4096, Writers: 2, Logger: zerolog.Nop()})
	require.NoError(t, err)
	p, err := e.Save(context.Background(), checkpoint.SaveRequest{Step: 5, Shard: ckptTestShard(0, 5), Plan: plan})
	require.NoError(t, err)
	_, err = p.Wait(context.Background())
	require.NoError(t, err)
	require.NoError(t, e.Close())

	out, _, err := runCkpt(t, "ls", "--store", "local://"+root)
	require.NoError(t, err)
	assert.Regexp(t, `5\s+durable`, out)
	out, _, err = runCkpt(t, "verify", "--store", "local://"+root)
	require.NoError(t, err, out)
	assert.Contains(t, out, "step 5 rank 0: OK")
	to := t.TempDir()
	_, _, err = runCkpt(t, "restore", "--store", "local://"+root, "--to", to)
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(to, "step-5.safetensors"))
}
