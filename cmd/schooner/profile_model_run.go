package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// execute runs the profiler with its output streamed to the user: a profile takes minutes,
// and its progress and warnings (CUDA missing, out of memory at some micro-batch size) are
// the profiler's to say.
func (r *profileRun) execute(ctx context.Context, stdout, stderr io.Writer) error {
	python, err := exec.LookPath(r.python)
	if err != nil {
		return fmt.Errorf("finding the Python interpreter %q, %w: the profiler needs Python 3 with PyTorch on a GPU node (set --python)", r.python, err)
	}
	if notes := r.unmodelled(); len(notes) > 0 {
		fmt.Fprintf(stderr, "note: the profiler measures a GPT decoder of %s's dimensions; it does not reproduce %s.\n",
			r.arch.Name, strings.Join(notes, ", "))
	}
	before, _ := os.Stat(r.out)

	c := exec.CommandContext(ctx, python, append([]string{"-m", profilerModule}, r.args()...)...)
	c.Stdout, c.Stderr = stdout, stderr
	c.Env = os.Environ()
	if r.pythonPath != "" {
		c.Env = append(c.Env, "PYTHONPATH="+joinPythonPath(r.pythonPath, os.Getenv("PYTHONPATH")))
	}
	if err := c.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			hint := ""
			if r.pythonPath == "" {
				hint = fmt.Sprintf("; if Python said No module named %s, run from the repository or set --python-path or $%s to trainer/python",
					strings.Split(profilerModule, ".")[0], pythonPathEnv)
			}
			return fmt.Errorf("profiling %s, the profiler (%s -m %s) failed with exit code %d: its output is above%s",
				r.arch.Name, r.python, profilerModule, exit.ExitCode(), hint)
		}
		return fmt.Errorf("profiling %s, running %s, %w", r.arch.Name, python, err)
	}

	after, err := os.Stat(r.out)
	if err != nil {
		return fmt.Errorf("profiling %s, the profiler exited successfully but wrote no %s (%w)", r.arch.Name, r.out, err)
	}
	if before != nil && after.ModTime().Equal(before.ModTime()) && after.Size() == before.Size() {
		return fmt.Errorf("profiling %s, the profiler exited successfully but did not rewrite %s (last written %s): refusing to report a stale profile",
			r.arch.Name, r.out, before.ModTime().Format(time.RFC3339))
	}
	return nil
}

// joinPythonPath puts dir in front of an existing PYTHONPATH, so the repository's
// schooner_train wins over an installed copy.
func joinPythonPath(dir, existing string) string {
	if existing == "" {
		return dir
	}
	return dir + string(os.PathListSeparator) + existing
}
