package stage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/schooner-ml/schooner/serving"
)

// Environment variables that locate the Python inference worker.
const (
	// EnvPython names the interpreter (default: the first of python3 on PATH and
	// /usr/bin/python3 whose `import torch` works).
	EnvPython = "SCHOONER_PYTHON"
	// EnvPythonPath is the directory holding schooner_serve (default: trainer/python of the
	// repository the node runs in, found from the working directory or the executable).
	EnvPythonPath = "SCHOONER_PYTHONPATH"
)

// WorkerModule is the inference worker's module (python3 -m WorkerModule).
const WorkerModule = "schooner_serve.worker"

// pythonModels maps the contract's model names (serving.BuiltinModels) to the worker's own
// configuration names (schooner_serve/config.py).
var pythonModels = map[string]string{
	"tiny": "tiny", "small": "small", "1b": "1b", "8b": "8b", "8b-v32k": "8b-v32k",
	"llama-1b": "1b", "llama-8b": "8b",
}

// Peers are the addresses of a stage's ring successor: its inference worker (Next) and the
// KV-cache holder on its node (Holder).
type Peers struct {
	Next   string `json:"next,omitempty"`
	Holder string `json:"holder,omitempty"`
}

// WorkerArgs are the inference worker's arguments (after python3 -m schooner_serve.worker)
// for assignment a listening on listen, with the successor addresses p (either may be empty:
// not known yet, the worker learns it through a peers op).
//
// A model the worker knows by name is passed by name; any other as dimensions over the tiny
// configuration. Restore (with replication on) asks for --resume-mode restore: resubmitted
// requests pull their KV cache from the holder instead of re-running their prompt; a standby's
// PreloadSeconds asks for --preload: it fetches them before it listens.
func WorkerArgs(a serving.StageAssignment, listen string, p Peers) []string {
	m := a.Model
	args := []string{}
	if name, ok := pythonModels[m.Name]; ok {
		args = append(args, "--model", name)
	} else {
		args = append(args, "--model", "tiny")
		for _, f := range []struct {
			flag string
			v    int
		}{{"--n-layers", m.Layers}, {"--hidden", m.Hidden}, {"--heads", m.Heads}, {"--kv-heads", m.KVHeads}, {"--ffn", m.FFN}, {"--vocab", m.Vocab}} {
			if f.v > 0 {
				args = append(args, f.flag, strconv.Itoa(f.v))
			}
		}
	}
	replicate := "off"
	if a.Replication {
		replicate = "on"
	}
	args = append(args, "--seed", strconv.FormatInt(m.Seed, 10),
		"--stage", strconv.Itoa(a.Stage), "--depth", strconv.Itoa(a.Depth),
		"--layers", fmt.Sprintf("%d:%d", a.Layers.First, a.Layers.End),
		"--listen", listen, "--deployment", a.Deployment, "--replicate", replicate)
	if p.Next != "" {
		args = append(args, "--next", p.Next)
	}
	if p.Holder != "" {
		args = append(args, "--holder", p.Holder)
	}
	if a.MaxBatch > 0 {
		args = append(args, "--max-batch", strconv.Itoa(a.MaxBatch))
	}
	if a.Restore && a.Replication {
		args = append(args, "--resume-mode", "restore")
	}
	if a.PreloadSeconds > 0 && a.Replication {
		args = append(args, "--preload", strconv.FormatFloat(a.PreloadSeconds, 'f', -1, 64))
	}
	if a.KVSwapGiB > 0 {
		args = append(args, "--swap-host-gib", strconv.FormatFloat(a.KVSwapGiB, 'f', -1, 64))
		if a.Depth > 1 {
			// Swapping pays where each stage would otherwise hold every microbatch in flight:
			// the first stage keeps one step in flight per stage.
			args = append(args, "--inflight", strconv.Itoa(a.Depth))
		}
	}
	return args
}

// PythonCommand is the default Supervisor.Command: the Python inference worker with python
// as the interpreter (FindPython when empty) and pythonPath prepended to PYTHONPATH
// (FindPythonPath when empty).
func PythonCommand(python, pythonPath string) func(args []string) (*exec.Cmd, error) {
	return PythonModule(python, pythonPath, WorkerModule)
}

// PythonModule is a command running `python -m module args...` from trainer/python, the
// interpreter and the path found as PythonCommand finds them, when the command is made.
func PythonModule(python, pythonPath, module string) func(args []string) (*exec.Cmd, error) {
	return func(args []string) (*exec.Cmd, error) {
		py, err := python, error(nil)
		if py == "" {
			if py, err = FindPython(); err != nil {
				return nil, err
			}
		}
		dir := pythonPath
		if dir == "" {
			if dir, err = FindPythonPath(); err != nil {
				return nil, err
			}
		}
		cmd := exec.Command(py, append([]string{"-m", module}, args...)...)
		pp := dir
		if old := os.Getenv("PYTHONPATH"); old != "" {
			pp += string(os.PathListSeparator) + old
		}
		cmd.Env = append(os.Environ(), "PYTHONPATH="+pp, "PYTHONUNBUFFERED=1")
		return cmd, nil
	}
}

var pythonOnce struct {
	sync.Mutex
	found string
}

// FindPython is the interpreter of the inference worker: $SCHOONER_PYTHON, else the first of
// python3 on PATH and /usr/bin/python3 that imports torch (the answer is kept).
func FindPython() (string, error) {
	if p := os.Getenv(EnvPython); p != "" {
		return p, nil
	}
	pythonOnce.Lock()
	defer pythonOnce.Unlock()
	if pythonOnce.found != "" {
		return pythonOnce.found, nil
	}
	var candidates []string
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, "/usr/bin/python3")
	var errs []error
	for _, c := range candidates {
		if err := importsTorch(c); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c, err))
			continue
		}
		pythonOnce.found = c
		return c, nil
	}
	return "", fmt.Errorf("no python3 with torch for the inference worker (set $%s): %w", EnvPython, errors.Join(errs...))
}

func importsTorch(python string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, "-c", "import torch").CombinedOutput()
	if err != nil {
		return fmt.Errorf("import torch: %w: %s", err, lastLine(string(out)))
	}
	return nil
}

// FindPythonPath is the directory holding schooner_serve: $SCHOONER_PYTHONPATH, else
// trainer/python in the working directory or one of its parents, else next to (or above)
// the running executable.
func FindPythonPath() (string, error) {
	if p := os.Getenv(EnvPythonPath); p != "" {
		return filepath.Abs(p)
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, start := range starts {
		for dir := start; ; dir = filepath.Dir(dir) {
			cand := filepath.Join(dir, "trainer", "python")
			if st, err := os.Stat(filepath.Join(cand, "schooner_serve", "worker.py")); err == nil && !st.IsDir() {
				return cand, nil
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return "", fmt.Errorf("cannot find trainer/python/schooner_serve (run from the repository or set $%s)", EnvPythonPath)
}
