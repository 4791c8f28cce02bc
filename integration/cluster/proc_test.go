package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one schooner process of the cluster, run from the built binary. Its output goes to a
// log file of its own; a restart appends to the same file after a marker line, so a failure
// message shows the whole history of that process.
type proc struct {
	name string
	bin  string
	args []string
	env  []string // added to this process's environment
	log  string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the current run ends
	waitErr error
	// offset is the log's size when the current run began: readiness is looked for after it.
	offset int64
	// killed marks a run ended on purpose (SIGKILL or stop), so its exit is no failure.
	killed bool
	runs   int
}

// start runs the process (again), appending to its log.
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	p.runs++
	fmt.Fprintf(f, "\n=== run %d at %s: %s %s\n", p.runs, time.Now().Format("15:04:05.000"), p.bin, strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	p.cmd, p.exited, p.killed, p.offset, p.waitErr = cmd, make(chan struct{}), false, st.Size(), nil
	go func(cmd *exec.Cmd, exited chan struct{}) {
		err := cmd.Wait()
		p.mu.Lock()
		if p.cmd == cmd {
			p.waitErr = err
		}
		p.mu.Unlock()
		close(exited)
	}(cmd, p.exited)
	return nil
}

// kill sends SIGKILL, as a crash or a lost machine would end it, and waits for the exit.
func (p *proc) kill() {
	p.signal(syscall.SIGKILL)
}

// stop ends the process cleanly (SIGTERM), or with SIGKILL after 10 seconds.
func (p *proc) stop() {
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	if exited == nil {
		return
	}
	go func() {
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			p.signal(syscall.SIGKILL)
		}
	}()
	p.signal(syscall.SIGTERM)
}

func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	if cmd != nil {
		p.killed = true
	}
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	<-exited
}

// pid is the current run's process id.
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// unexpectedExit says how the current run ended when it ended on its own; "" while it runs or
// when it was ended on purpose.
func (p *proc) unexpectedExit() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.killed {
		return ""
	}
	select {
	case <-p.exited:
		return fmt.Sprintf("%s exited by itself: %v", p.name, p.waitErr)
	default:
		return ""
	}
}

// waitFor waits until the current run has written want to its log, and fails when the run
// exits first or within passes.
func (p *proc) waitFor(want string, within time.Duration) error {
	p.mu.Lock()
	offset, exited := p.offset, p.exited
	p.mu.Unlock()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		b, err := os.ReadFile(p.log)
		if err == nil && int64(len(b)) > offset && bytes.Contains(b[offset:], []byte(want)) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited before it said %q", p.name, want)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not say %q within %s", p.name, want, within)
		}
	}
}

// field is the first word after label on a line of the current run's log: what a banner says
// ("EC2 events    http://…"), or "" when no line has it.
func (p *proc) field(label string) string {
	p.mu.Lock()
	offset := p.offset
	p.mu.Unlock()
	b, _ := os.ReadFile(p.log)
	if int64(len(b)) < offset {
		return ""
	}
	for _, line := range strings.Split(string(b[offset:]), "\n") {
		if _, rest, ok := strings.Cut(line, label); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				return f[0]
			}
		}
	}
	return ""
}

// tail is the last n lines of the process's log.
func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.log)
	if errors.Is(err, os.ErrNotExist) {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
