package colocate

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// mpsDaemon is an MPS control daemon of the pair's own: its pipe and log directories are
// private, so it neither needs nor disturbs a node-wide one, and it is quit when the pair ends.
// Two processes' kernels run at the same time only under MPS.
type mpsDaemon struct {
	control string
	env     []string
}

// startMPS starts the daemon under dir; ok is false (with why) where MPS is not installed.
func startMPS(ctx context.Context, dir string) (*mpsDaemon, string, error) {
	control, err := exec.LookPath("nvidia-cuda-mps-control")
	if err != nil {
		return nil, "nvidia-cuda-mps-control is not installed: the two sides time-slice the GPU", nil
	}
	pipe, logs := filepath.Join(dir, "mps-pipe"), filepath.Join(dir, "mps-log")
	for _, d := range []string{pipe, logs} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, "", fmt.Errorf("MPS: %w", err)
		}
	}
	d := &mpsDaemon{control: control, env: []string{"CUDA_MPS_PIPE_DIRECTORY=" + pipe, "CUDA_MPS_LOG_DIRECTORY=" + logs}}
	cmd := exec.CommandContext(ctx, control, "-d")
	cmd.Env = append(os.Environ(), d.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("starting the MPS control daemon: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return d, "", nil
}

// stop quits the daemon (and the MPS server it started).
func (d *mpsDaemon) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.control)
	cmd.Env = append(os.Environ(), d.env...)
	cmd.Stdin = strings.NewReader("quit\n")
	_ = cmd.Run()
}
