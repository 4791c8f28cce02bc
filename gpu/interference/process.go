package interference

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/schooner-ml/schooner/interference"
	"github.com/schooner-ml/schooner/internal/procgroup"
)

// ProcessExecutor runs the Python executor (trainer/python/schooner_interfere) as one
// long-lived child: the CUDA context and the workloads are built once for a whole study, and
// each run is one JSON line each way. It is the executor of a node agent with a GPU.
type ProcessExecutor struct {
	// Command makes the executor's command (`python3 -m schooner_interfere.executor` with
	// trainer/python on PYTHONPATH) with args appended; it is called when a child is needed,
	// so an agent finds its interpreter at its first study, not at its start.
	Command func(args []string) (*exec.Cmd, error)
	Args    []string // extra executor arguments, e.g. --scale tiny --allow-cpu (tests)
	Stderr  io.Writer

	mu  sync.Mutex
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

var _ Executor = (*ProcessExecutor)(nil)

// ExecutorModule is the Python module ProcessExecutor's command runs.
const ExecutorModule = "schooner_interfere.executor"

// stopGrace is how long a cancelled executor has to end its run before its process group is
// killed: a run may hold an MPS daemon, which only the executor can shut down (it is a daemon,
// outside the group), and best-effort children that would go on loading the GPU and skew the
// next study's figures (a study continued with --resume on the same machine).
const stopGrace = 30 * time.Second

func (p *ProcessExecutor) start() error {
	if p.cmd != nil {
		return nil
	}
	cmd, err := p.Command(p.Args)
	if err != nil {
		return fmt.Errorf("the interference executor: %w", err)
	}
	cmd.Stderr = p.Stderr
	// Its own process group, so that a cancelled run stops the executor and every child it
	// started (procgroup), not the executor alone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second // a daemon the run started may hold stderr open
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the interference executor (%s): %w", cmd.Path, err)
	}
	p.cmd, p.in, p.out = cmd, in, bufio.NewReaderSize(out, 1<<20)
	return nil
}

// call sends one request and decodes its answer into result. A cancelled context stops the
// child's process group, SIGTERM first so that the executor ends its run cleanly (children
// killed, MPS shut down), SIGKILL after stopGrace; the next call starts a new child.
func (p *ProcessExecutor) call(ctx context.Context, req map[string]any, result any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.start(); err != nil {
		return err
	}
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	defer close(done)
	pid := p.cmd.Process.Pid
	go func() {
		select {
		case <-ctx.Done():
			procgroup.Terminate(pid, stopGrace, done) // the read below then fails; lost reaps the child
		case <-done:
		}
	}()
	if _, err := p.in.Write(append(line, '\n')); err != nil {
		return p.lost(ctx, err)
	}
	ans, err := p.out.ReadBytes('\n')
	if err != nil {
		return p.lost(ctx, err)
	}
	var msg struct {
		OK    json.RawMessage `json:"ok"`
		Error string          `json:"error"`
	}
	if err := json.Unmarshal(ans, &msg); err != nil {
		return fmt.Errorf("the interference executor answered %q: %w", strings.TrimSpace(string(ans)), err)
	}
	if msg.Error != "" {
		return errors.New(msg.Error)
	}
	return json.Unmarshal(msg.OK, result)
}

// lost reports a broken child (or the caller's cancellation) and forgets the child.
func (p *ProcessExecutor) lost(ctx context.Context, err error) error {
	p.kill()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("the interference executor stopped: %w", err)
}

func (p *ProcessExecutor) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
	p.cmd = nil
}

// Close ends the child.
func (p *ProcessExecutor) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	_ = p.in.Close() // the executor ends at the end of its input
	err := p.cmd.Wait()
	p.cmd = nil
	return err
}

func (p *ProcessExecutor) GPU(ctx context.Context) (interference.GPUInfo, error) {
	var g interference.GPUInfo
	err := p.call(ctx, map[string]any{"op": "gpu"}, &g)
	return g, err
}

func (p *ProcessExecutor) Available(ctx context.Context, m interference.Mechanism) error {
	var a struct {
		Reason string `json:"reason"`
	}
	if err := p.call(ctx, map[string]any{"op": "available", "mechanism": m}, &a); err != nil {
		return fmt.Errorf("probing %s: %w", m, err)
	}
	if a.Reason != "" {
		return errors.New(a.Reason)
	}
	return nil
}

func (p *ProcessExecutor) Alone(ctx context.Context, w interference.Workload, req interference.StudyRequest) (interference.Run, error) {
	var r interference.Run
	err := p.call(ctx, map[string]any{"op": "alone", "workload": w.Name, "request": req}, &r)
	return r, err
}

func (p *ProcessExecutor) Shared(ctx context.Context, pair interference.Pair, m interference.Mechanism, req interference.StudyRequest) (interference.Run, error) {
	var r interference.Run
	err := p.call(ctx, map[string]any{"op": "shared", "pair": pair, "mechanism": m, "request": req}, &r)
	return r, err
}

// Counters asks the executor for the workload's Nsight Compute counters (or why there are none).
func (p *ProcessExecutor) Counters(ctx context.Context, w interference.Workload) (interference.Counters, error) {
	var c interference.Counters
	err := p.call(ctx, map[string]any{"op": "counters", "workload": w.Name}, &c)
	return c, err
}

// Simulated is false: the runs are measured (on a CPU in the executor's test mode, which the
// GPU model it reports says).
func (p *ProcessExecutor) Simulated() bool { return false }
