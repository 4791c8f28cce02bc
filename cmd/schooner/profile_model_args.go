package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
)

// pythonPathEnv names where schooner_train lives when the command does not run from the
// repository (on a GPU node the repository is rarely the working directory).
const pythonPathEnv = "SCHOONER_PYTHONPATH"

// profilerModule is the Python entry point; its command line is the contract between the
// two sides (profileRun.args).
const profilerModule = "schooner_train.profile"

// dimensionFlags are the flags that describe a model without --model.
var dimensionFlags = []string{"name", "layers", "hidden", "heads", "ffn", "vocab", "seq-len"}

// profileRun is one resolved invocation: everything checked, nothing left to default.
type profileRun struct {
	arch       planner.Architecture
	builtin    bool
	mbs, tps   []int
	gpu        gpu.Type
	warmup     int
	reps       int
	out        string
	python     string // as given; resolved by execute
	pythonPath string // "" when neither the flag, ./trainer/python nor the env var gives one
}

// resolve checks the flags and turns either form of model (built-in name or dimensions)
// into explicit dimensions, so the profiler never needs to know the built-in models.
func (f *profileModelFlags) resolve(cmd *cobra.Command) (*profileRun, error) {
	arch, builtin, err := f.architecture(cmd)
	if err != nil {
		return nil, err
	}
	r := &profileRun{arch: arch, builtin: builtin, gpu: gpu.Type(f.gpuType), warmup: f.warmup, reps: f.reps, python: f.python}
	if r.mbs, err = positiveList("--mbs", f.mbs); err != nil {
		return nil, err
	}
	if r.tps, err = positiveList("--tp", f.tp); err != nil {
		return nil, err
	}
	for _, tp := range r.tps {
		if !arch.SupportsTP(tp) {
			return nil, fmt.Errorf("--tp %d does not divide %s: heads (%d) and FFN (%d) must split evenly over the GPUs", tp, arch.Name, arch.Heads, arch.FFN)
		}
	}
	if !gpu.Known(r.gpu) {
		return nil, fmt.Errorf("unknown --gpu-type %q: known types are %s", f.gpuType, knownGPUList())
	}
	if f.warmup < 0 {
		return nil, fmt.Errorf("--warmup must not be negative, got %d", f.warmup)
	}
	if f.reps < 1 {
		return nil, fmt.Errorf("--reps must be at least 1, got %d", f.reps)
	}
	if f.python == "" {
		return nil, errors.New("--python must name a Python interpreter")
	}
	r.out = f.out
	if r.out == "" {
		r.out = arch.Name + ".json"
	}
	if r.pythonPath, err = resolvePythonPath(f.pythonPath); err != nil {
		return nil, err
	}
	return r, nil
}

// architecture is the model to profile: a built-in one by name, or the dimensions given.
// Mixing the two is refused rather than guessed at: which of them should win is not obvious.
func (f *profileModelFlags) architecture(cmd *cobra.Command) (planner.Architecture, bool, error) {
	var given []string
	for _, name := range dimensionFlags {
		if cmd.Flags().Changed(name) {
			given = append(given, "--"+name)
		}
	}
	if f.model != "" {
		if len(given) > 0 {
			return planner.Architecture{}, false, fmt.Errorf("--model and %s cannot be used together: give a built-in model or every dimension",
				strings.Join(given, ", "))
		}
		a, ok := planner.BuiltinArchitecture(f.model)
		if !ok {
			return planner.Architecture{}, false, fmt.Errorf("unknown --model %q: built-in models are %s (or give --name and every dimension)", f.model, builtinList())
		}
		return a, true, nil
	}
	if len(given) < len(dimensionFlags) {
		return planner.Architecture{}, false, fmt.Errorf("give --model (%s) or every one of %s", builtinList(), "--"+strings.Join(dimensionFlags, ", --"))
	}
	a := planner.Architecture{Name: f.name, Layers: f.layers, Hidden: f.hidden, Heads: f.heads, FFN: f.ffn, Vocab: f.vocab, SeqLen: f.seqLen}
	if strings.TrimSpace(a.Name) == "" {
		return planner.Architecture{}, false, errors.New("--name must not be empty")
	}
	if err := a.Validate(); err != nil {
		return planner.Architecture{}, false, fmt.Errorf("checking the model's dimensions, %w", err)
	}
	return a, false, nil
}

// args is the profiler's command line after "-m schooner_train.profile".
func (r *profileRun) args() []string {
	itoa := strconv.Itoa
	return []string{
		"--name", r.arch.Name, "--layers", itoa(r.arch.Layers), "--hidden", itoa(r.arch.Hidden),
		"--heads", itoa(r.arch.Heads), "--ffn", itoa(r.arch.FFN), "--vocab", itoa(r.arch.Vocab),
		"--seq-len", itoa(r.arch.SeqLen), "--mbs", joinInts(r.mbs), "--tp", joinInts(r.tps),
		"--gpu-type", string(r.gpu), "--warmup", itoa(r.warmup), "--reps", itoa(r.reps), "--out", r.out,
	}
}

// unmodelled lists what of a built-in architecture the profiler's GPT decoder does not
// reproduce, so the user knows the measurement is of a stand-in.
func (r *profileRun) unmodelled() []string {
	var out []string
	if r.arch.KVHeads > 0 && r.arch.KVHeads != r.arch.Heads {
		out = append(out, fmt.Sprintf("grouped-query attention (%d KV heads)", r.arch.KVHeads))
	}
	if r.arch.GatedMLP {
		out = append(out, "the SwiGLU MLP and RMSNorm")
	}
	if r.arch.Rotary {
		out = append(out, "rotary positions")
	}
	if r.arch.TiedEmbeddings {
		out = append(out, "the tied head")
	}
	if r.arch.FinalNormLayer {
		out = append(out, "the final norm layer")
	}
	return out
}

// resolvePythonPath is the directory to add to PYTHONPATH: the flag, else ./trainer/python
// when run from the repository, else $SCHOONER_PYTHONPATH. It is made absolute so that the
// profiler finds it whatever directory it changes to.
func resolvePythonPath(flag string) (string, error) {
	dir := flag
	if dir == "" {
		if st, err := os.Stat(filepath.Join("trainer", "python")); err == nil && st.IsDir() {
			dir = filepath.Join("trainer", "python")
		} else {
			dir = os.Getenv(pythonPathEnv)
		}
	}
	if dir == "" {
		return "", nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving --python-path %s, %w", dir, err)
	}
	return abs, nil
}

func positiveList(flag string, v []int) ([]int, error) {
	if len(v) == 0 {
		return nil, fmt.Errorf("%s must list at least one value", flag)
	}
	seen := map[int]bool{}
	var out []int
	for _, x := range v {
		if x <= 0 {
			return nil, fmt.Errorf("%s values must be positive, got %d", flag, x)
		}
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func builtinList() string { return strings.Join(planner.BuiltinModels(), ", ") }

func knownGPUList() string {
	s := make([]string, len(gpu.KnownTypes))
	for i, g := range gpu.KnownTypes {
		s[i] = string(g)
	}
	return strings.Join(s, ", ")
}
