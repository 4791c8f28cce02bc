package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	gi "github.com/schooner-ml/schooner/gpu/interference"
	"github.com/schooner-ml/schooner/interference"
	"github.com/schooner-ml/schooner/internal/atomicfile"
	"github.com/schooner-ml/schooner/serving/stage"
)

// runLocalStudy runs the study on this machine through the Python executor, printing progress,
// and writes and shows it as a node's study named after this host.
func runLocalStudy(cmd *cobra.Command, req interference.StudyRequest, dir string, cpuTest, resume bool) error {
	x := pythonInterferenceExecutor(cmd.ErrOrStderr())
	if cpuTest {
		x.Args = []string{"--scale", "tiny", "--allow-cpu"}
	}
	defer x.Close()
	ctx, stop := interruptible(cmd)
	defer stop()
	l := localStudy{dir: dir, node: hostname(), resume: resume, again: againWithResume(os.Args),
		stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()}
	return l.run(ctx, x, req)
}

// pythonInterferenceExecutor is the Python executor (trainer/python/schooner_interfere), its
// interpreter and path found as the inference worker's are, at its first run.
func pythonInterferenceExecutor(stderr io.Writer) *gi.ProcessExecutor {
	return &gi.ProcessExecutor{Command: stage.PythonModule("", "", gi.ExecutorModule), Stderr: stderr}
}

// localStudy is a study on this machine's GPU, kept in dir/NODE.json. A full study takes
// longer than many machines let one command run (about 15 minutes on an H100), and a study is
// interrupted (Ctrl-C, SIGTERM, the caller's timeout): so the file is rewritten after every
// step, whole, and a later run with resume continues it from there. Nothing measured is lost.
type localStudy struct {
	dir, node string
	resume    bool
	// again is the command that continues the study, for the message of an interrupted one.
	again          string
	stdout, stderr io.Writer
}

func (l localStudy) path() string { return filepath.Join(l.dir, safeName(l.node)+".json") }

func (l localStudy) run(ctx context.Context, x gi.Executor, req interference.StudyRequest) error {
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return err
	}
	earlier, err := l.earlier()
	if err != nil {
		return err
	}
	path := l.path()
	st, err := gi.RunStudyWith(ctx, x, req, gi.StudyOptions{
		Earlier: earlier,
		Progress: func(done, total int, what string) {
			fmt.Fprintf(l.stderr, "[%d/%d] %s\n", done+1, total, what)
		},
		Kept: func(kept, total int) {
			fmt.Fprintf(l.stderr, "kept %d of %d steps from the earlier study in %s; running the other %d\n", kept, total, path, total-kept)
		},
		Checkpoint: func(s interference.Study) error {
			s.Node = l.node
			return atomicfile.Write(path, s.Encode)
		},
	})
	if errors.Is(err, gi.ErrNotContinuable) {
		return fmt.Errorf("--resume: %s: %w (to measure it anew, give another --out)", path, err)
	}
	st.Node = l.node
	if err == nil {
		return writeStudies(l.stdout, l.dir, interference.StudyResult{Nodes: []interference.NodeStudy{{NodeID: l.node, Study: &st}}})
	}
	if st.StepsDone() == 0 {
		return err // nothing measured: nothing to save, nothing to continue
	}
	// What finished is in the file already (every step's checkpoint); write the plot and
	// show the table of it too, then say how to go on.
	if werr := writeStudies(l.stdout, l.dir, interference.StudyResult{Nodes: []interference.NodeStudy{{NodeID: l.node, Study: &st}}}); werr != nil {
		fmt.Fprintf(l.stderr, "writing the partial study: %v\n", werr)
	}
	done := st.StepsDone()
	fmt.Fprintf(l.stderr, "stopped: %d of %d steps done, saved in %s; continue the study with\n  %s\n",
		done, done+len(st.Missing), path, l.again)
	return fmt.Errorf("the study stopped after %d of %d steps: %w", done, done+len(st.Missing), err)
}

// earlier is the study to continue: with resume, the one in the file (none yet: a fresh
// study). Without resume, a partial study there is refused rather than overwritten: its steps
// would be lost.
func (l localStudy) earlier() (*interference.Study, error) {
	path := l.path()
	st, err := interference.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if l.resume {
			fmt.Fprintf(l.stderr, "no earlier study in %s: starting one\n", path)
		}
		return nil, nil
	case err != nil && l.resume:
		return nil, fmt.Errorf("--resume: %w", err)
	case err != nil:
		return nil, nil // not a study this build reads: a new study replaces it, as before
	case l.resume:
		return &st, nil
	case st.Partial():
		return nil, fmt.Errorf("%s holds a partial study (%d of %d steps): continue it with --resume, or give another --out",
			path, st.StepsDone(), st.StepsDone()+len(st.Missing))
	}
	return nil, nil
}

// againWithResume is the command line args with --resume, as a user would type it again.
func againWithResume(args []string) string {
	words := []string{"schooner"}
	resume := false
	for _, a := range args[1:] {
		resume = resume || a == "--resume" || strings.HasPrefix(a, "--resume=")
		words = append(words, shellWord(a))
	}
	if !resume {
		words = append(words, "--resume")
	}
	return strings.Join(words, " ")
}

// shellWord quotes a word for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=+./:,@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
