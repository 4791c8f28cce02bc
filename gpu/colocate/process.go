package colocate

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/schooner-ml/schooner/colocation"
)

// sideProcess is one side's program, started in its own process group so that stopping it
// stops what it started too.
type sideProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
	code int
}

// startSide starts a program with the launch shim preloaded for a role.
func startSide(p colocation.Program, env []string, stderr, stdout *os.File) (*sideProcess, error) {
	cmd := exec.Command(p.Command[0], p.Command[1:]...)
	cmd.Dir = p.Dir
	cmd.Env = append(append(os.Environ(), p.Env...), env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &sideProcess{cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		s.code = exitCode(err)
		close(s.done)
	}()
	return s, nil
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// stop asks the side's process group to end, then kills it after grace.
func (s *sideProcess) stop(grace time.Duration) {
	select {
	case <-s.done:
		return
	default:
	}
	pgid := -s.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(grace):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-s.done
	}
}

// pythonPathWith puts dirs first on the PYTHONPATH the program's environment (or this
// process's) already carries.
func pythonPathWith(env []string, dirs ...string) string {
	old := os.Getenv("PYTHONPATH")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PYTHONPATH="); ok {
			old = v
		}
	}
	if old != "" {
		dirs = append(dirs, old)
	}
	return "PYTHONPATH=" + strings.Join(dirs, string(os.PathListSeparator))
}

// preload adds the shim to an LD_PRELOAD the program's environment may already carry.
func preload(shim string, env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "LD_PRELOAD="); ok && v != "" {
			return "LD_PRELOAD=" + shim + ":" + v
		}
	}
	if v := os.Getenv("LD_PRELOAD"); v != "" {
		return "LD_PRELOAD=" + shim + ":" + v
	}
	return "LD_PRELOAD=" + shim
}
