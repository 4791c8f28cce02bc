package profiles

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/internal/jsonerr"
	"github.com/schooner-ml/schooner/planner"
)

// Where things are in Sailor's repository, relative to the folder holding Planner/ and
// providers/.
const (
	sailorLLMInfo     = "Planner/llm_info.json"
	sailorProfiles    = "Planner/sailor_planner/profiles"
	sailorSimProfiles = "Planner/simulations/profiles_tmp.json"
	sailorIntraNode   = "providers/intra_node_bandwidths.json"
	sailorNetCoeffs   = "providers/network_coeffs_all_homo.json"
	sailorCommCost    = "providers/gcp/communication_cost.json"
	sailorMultizone   = "providers/multizone_bandwidths.json"
	sailorMultizoneHt = "providers/multizone_bandwidths_het.json"
)

// sailorGPUs maps Sailor's GPU directory and key names to schooner's types.
var sailorGPUs = map[string]gpu.Type{
	"A100-40": gpu.A100_40,
	"A100-80": gpu.A100_80,
	"V100-16": gpu.V100,
	"GH-96":   gpu.GH200,
}

// sailorGPU maps a Sailor GPU name to a schooner type: Sailor's names for GPUs schooner has a
// datasheet for map to schooner's, schooner's own names pass through, and any other valid
// name (RTX-2080, RTX-3090, Titan-RTX) is a type of its own, known by its profile alone.
func sailorGPU(name string) (gpu.Type, bool) {
	if t, ok := sailorGPUs[name]; ok {
		return t, true
	}
	return gpu.Type(name), gpu.ValidName(gpu.Type(name))
}

// profileOnlyNote is what the import says of a GPU type schooner has no datasheet for.
func profileOnlyNote(file string, g gpu.Type) string {
	return fmt.Sprintf("%s: %s has no datasheet in schooner: imported by its profile alone (simulated from the measured times; memory is predicted, its capacity not checked)", file, g)
}

// sailorArchitecture is the model Sailor actually profiled under name, which Load uses to
// derive compute that lines up with Sailor's measurements. For LLAMA-3-8 that is not
// Llama-3-8B: llm_info.json describes a GPT-style stand-in with 32 heads of full multi-head
// attention, a 4·hidden SwiGLU MLP with biases, GPT-2's vocabulary and a separate final-norm
// layer (35 layers). The other three match the built-in architectures.
func sailorArchitecture(name string) (planner.Architecture, bool) {
	if name == "LLAMA-3-8" {
		return planner.Architecture{
			Name: "LLAMA-3-8", Layers: 32, Hidden: 4096, Heads: 32, FFN: 16384, Vocab: 50257,
			SeqLen: 8192, TiedEmbeddings: true, GatedMLP: true, Rotary: true, FinalNormLayer: true,
		}, true
	}
	return planner.BuiltinArchitecture(name)
}

// sailorGH200Overhead is the framework memory per GPU that Sailor's simulator adds on its
// GH200 nodes (runtime_simulator.py, get_memory_footprint_on_gpu): 4.76 GB for loading
// Megatron's fused kernels, "depends on GPU + platform", and 300 MB more.
const sailorGH200Overhead = 4.76e9 + 300e6

// sailorMemoryModel is the memory model of the platform Sailor profiled on: 24 bytes per
// parameter (Adam's two moments, an fp32 copy, gradients, a communication buffer and
// DeepSpeed's extra copies) and the framework's footprint per GPU: Sailor's measured GH200
// value there, the 2–3 GB its planner assumes (MemOverheadBytes) on the others.
func sailorMemoryModel() *planner.MemoryModel {
	return &planner.MemoryModel{
		BytesPerParam: planner.TrainingBytesPerParam,
		OverheadBytes: planner.MemOverheadBytes,
		OverheadByGPU: map[gpu.Type]float64{gpu.GH200: sailorGH200Overhead},
		Source:        "Sailor's platform: 24 B/param; framework 5.06 GB per GH200 (its simulator), 2.5 GB elsewhere (its planner: 2-3 GB)",
	}
}

// sailorSource reads files of a Sailor tree and names them in messages.
type sailorSource struct {
	fsys fs.FS
	// root is how file names are shown: the directory, or the bundle's location.
	root string
}

func (s sailorSource) name(rel string) string {
	if s.root == "" {
		return rel
	}
	return filepath.Join(s.root, filepath.FromSlash(rel))
}

// readJSON parses rel into v; a missing file is reported as fs.ErrNotExist.
func (s sailorSource) readJSON(rel string, v any) error {
	data, err := fs.ReadFile(s.fsys, rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &FileError{Path: s.name(rel), Err: fs.ErrNotExist}
		}
		return fmt.Errorf("reading Sailor data, %w", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return &FileError{Path: s.name(rel), Err: jsonerr.Describe(data, err)}
	}
	return nil
}

func dirSource(dir string) sailorSource {
	return sailorSource{fsys: os.DirFS(dir), root: dir}
}

// ImportSailor reads Sailor's model data as laid out in its repository, dir being the folder
// that holds Planner/ and providers/: memory from Planner/llm_info.json, measured compute
// from Planner/sailor_planner/profiles/<model>/<gpu>/profile.json. GPU directories map to
// schooner's types (GH-96 is GH200-96); GPUs schooner has no datasheet for (RTX-2080, RTX-3090,
// Titan-RTX) are imported under their own names, known by their profiles alone. See
// ImportSailorWithNotes for what is skipped or filled in.
func ImportSailor(dir string) (map[string]*planner.ModelProfile, error) {
	models, _, err := ImportSailorWithNotes(dir)
	return models, err
}

// ImportSailorWithNotes is ImportSailor, also returning a note for everything it skipped or
// filled in: GPUs imported by profile alone; profiles whose layer count differs
// from llm_info.json's (Sailor's GPT-Neo-2.7/GH-96 is a copy of OPT-350's); memory for TP
// degrees a profile has but llm_info.json lacks, computed with TransformerMem when the
// model's architecture is known (else those entries are dropped).
//
// Malformed JSON, gaps in layer numbering, negative times and layer counts that differ
// inside one file are errors naming the file.
func ImportSailorWithNotes(dir string) (map[string]*planner.ModelProfile, []string, error) {
	return importSailorModels(dirSource(dir))
}

// sailorLayer is one llm_info.json layer entry.
type sailorLayer struct {
	ParamsFloats    *float64 `json:"params_floats"`
	ActOutputFloats *float64 `json:"act_output_floats"`
	ActInputFloats  *float64 `json:"act_input_floats"`
	ActMemFloats    *float64 `json:"act_mem_floats"`
}

func importSailorModels(src sailorSource) (map[string]*planner.ModelProfile, []string, error) {
	var info map[string]map[string]map[string]sailorLayer
	if err := src.readJSON(sailorLLMInfo, &info); err != nil {
		return nil, nil, err
	}
	var notes []string
	byDir := map[string]*planner.ModelProfile{} // by Sailor's name, which the profile directories use
	models := map[string]*planner.ModelProfile{}
	for _, name := range sortedKeys(info) {
		m, err := sailorMem(src.name(sailorLLMInfo), name, info[name])
		if err != nil {
			return nil, nil, err
		}
		m.MemoryModel = sailorMemoryModel()
		byDir[name] = m
		models[m.Name] = m
	}

	entries, err := fs.ReadDir(src.fsys, sailorProfiles)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("listing %s, %w", src.name(sailorProfiles), err)
	}
	for _, me := range entries {
		if !me.IsDir() {
			continue
		}
		m := byDir[me.Name()]
		if m == nil {
			notes = append(notes, fmt.Sprintf("%s: no entry in %s, skipped", src.name(path.Join(sailorProfiles, me.Name())), sailorLLMInfo))
			continue
		}
		gpuDirs, err := fs.ReadDir(src.fsys, path.Join(sailorProfiles, me.Name()))
		if err != nil {
			return nil, nil, fmt.Errorf("listing %s, %w", src.name(path.Join(sailorProfiles, me.Name())), err)
		}
		for _, ge := range gpuDirs {
			if !ge.IsDir() {
				continue
			}
			rel := path.Join(sailorProfiles, me.Name(), ge.Name(), "profile.json")
			g, ok := sailorGPU(ge.Name())
			if !ok {
				notes = append(notes, fmt.Sprintf("%s: %q is not a GPU type name, skipped", src.name(rel), ge.Name()))
				continue
			}
			if !gpu.Known(g) {
				notes = append(notes, profileOnlyNote(src.name(rel), g))
			}
			c, layers, err := sailorCompute(src, rel, g)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					notes = append(notes, fmt.Sprintf("%s: missing, skipped", src.name(rel)))
					continue
				}
				return nil, nil, err
			}
			if layers != m.NumLayers() {
				notes = append(notes, fmt.Sprintf("%s: %d layers, %s has %d for %s; skipped",
					src.name(rel), layers, sailorLLMInfo, m.NumLayers(), m.Name))
				continue
			}
			notes = append(notes, fillMissingMem(m, c, src.name(rel))...)
			m.Compute[g] = c
		}
	}
	simNotes, err := mergeSailorSimProfiles(src, byDir)
	if err != nil {
		return nil, nil, err
	}
	return models, append(notes, simNotes...), nil
}

// sailorMem converts one model's llm_info.json entry.
func sailorMem(file, name string, byTP map[string]map[string]sailorLayer) (*planner.ModelProfile, error) {
	m := &planner.ModelProfile{Name: name, Mem: map[int][]planner.LayerMem{}, Compute: map[gpu.Type]*planner.Compute{}}
	if canon, ok := planner.ResolveModelName(name); ok {
		m.Name = canon
	}
	for _, tpKey := range sortedKeys(byTP) {
		tp, err := strconv.Atoi(tpKey)
		if err != nil || tp <= 0 {
			return nil, fileErrorf(file, "model %s: TP degree %q is not a positive integer", name, tpKey)
		}
		layers, err := sailorLayers(byTP[tpKey], func(i int, l sailorLayer) (planner.LayerMem, error) {
			fields := []*float64{l.ParamsFloats, l.ActOutputFloats, l.ActInputFloats, l.ActMemFloats}
			for _, f := range fields {
				if f == nil {
					return planner.LayerMem{}, errors.New("lacks a *_floats field")
				}
				if bad(*f) {
					return planner.LayerMem{}, fmt.Errorf("has %v floats", *f)
				}
			}
			return planner.LayerMem{ParamsFloats: *l.ParamsFloats, ActOutputFloats: *l.ActOutputFloats,
				ActInputFloats: *l.ActInputFloats, ActMemFloats: *l.ActMemFloats}, nil
		})
		if err != nil {
			return nil, fileErrorf(file, "model %s tp %d: %v", name, tp, err)
		}
		if n := m.NumLayers(); n > 0 && len(layers) != n {
			return nil, fileErrorf(file, "model %s tp %d has %d layers, other TP degrees %d", name, tp, len(layers), n)
		}
		m.Mem[tp] = layers
	}
	if len(m.Mem) == 0 {
		return nil, fileErrorf(file, "model %s has no TP degrees", name)
	}
	m.SeqLen = sailorSeqLen(m)
	return m, nil
}

// sailorSeqLen recovers the sequence length from the embedding's input, which Sailor counts
// as s² + 2s floats (attention mask, token and position ids); a built-in model's own length
// is used when that does not work out.
func sailorSeqLen(m *planner.ModelProfile) int {
	for _, layers := range m.Mem {
		in := layers[0].ActInputFloats
		s := int(math.Round(math.Sqrt(in+1) - 1))
		if s > 0 && float64(s*s+2*s) == in {
			return s
		}
		break
	}
	if a, ok := planner.BuiltinArchitecture(m.Name); ok {
		return a.SeqLen
	}
	return 0
}

// sailorLayers turns a {"0": x, "1": y, ...} object into a slice, requiring the numbering
// to run from 0 without gaps.
func sailorLayers[In, Out any](byLayer map[string]In, conv func(int, In) (Out, error)) ([]Out, error) {
	out := make([]Out, len(byLayer))
	seen := make([]bool, len(byLayer))
	for key, v := range byLayer {
		i, err := strconv.Atoi(key)
		if err != nil {
			return nil, fmt.Errorf("layer key %q is not a number", key)
		}
		if i < 0 || i >= len(byLayer) {
			return nil, fmt.Errorf("layer %d is out of range: %d layers must be numbered 0..%d, so some are missing",
				i, len(byLayer), len(byLayer)-1)
		}
		o, err := conv(i, v)
		if err != nil {
			return nil, fmt.Errorf("layer %d %v", i, err)
		}
		out[i], seen[i] = o, true
	}
	for i, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("layer %d is missing", i)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no layers")
	}
	return out, nil
}

// sailorTable is one model's measured compute on one GPU type in Sailor's layout:
// {mbs: {tp: {layer: [fwd, bwd, update]}}}.
type sailorTable = map[string]map[string]map[string][]float64

// sailorCompute reads one profile.json. It returns the compute and its layer count.
func sailorCompute(src sailorSource, rel string, g gpu.Type) (*planner.Compute, int, error) {
	var raw sailorTable
	if err := src.readJSON(rel, &raw); err != nil {
		return nil, 0, err
	}
	return sailorComputeOf(raw, src.name(rel), g, "measured: Sailor "+rel)
}

// sailorComputeOf converts one table; file names it in errors (with the model and GPU when
// the file holds several).
func sailorComputeOf(raw sailorTable, file string, g gpu.Type, source string) (*planner.Compute, int, error) {
	c := &planner.Compute{
		GPU:    g,
		Source: source,
		Times:  map[int]map[int][]planner.LayerTime{},
	}
	layers := -1
	for _, mbsKey := range sortedKeys(raw) {
		mbs, err := strconv.Atoi(mbsKey)
		if err != nil || mbs <= 0 {
			return nil, 0, fileErrorf(file, "microbatch size %q is not a positive integer", mbsKey)
		}
		for _, tpKey := range sortedKeys(raw[mbsKey]) {
			tp, err := strconv.Atoi(tpKey)
			if err != nil || tp <= 0 {
				return nil, 0, fileErrorf(file, "mbs %d: TP degree %q is not a positive integer", mbs, tpKey)
			}
			times, err := sailorLayers(raw[mbsKey][tpKey], func(i int, v []float64) (planner.LayerTime, error) {
				if len(v) != 3 {
					return planner.LayerTime{}, fmt.Errorf("has %d numbers, want [fwd, bwd, update]", len(v))
				}
				for k, name := range []string{"fwd", "bwd", "update"} {
					if bad(v[k]) {
						return planner.LayerTime{}, fmt.Errorf("%s time is %v", name, v[k])
					}
				}
				return planner.LayerTime{Fwd: v[0], Bwd: v[1], Update: v[2]}, nil
			})
			if err != nil {
				return nil, 0, fileErrorf(file, "mbs %d tp %d: %v", mbs, tp, err)
			}
			if layers >= 0 && len(times) != layers {
				return nil, 0, fileErrorf(file, "mbs %d tp %d has %d layers, other entries %d", mbs, tp, len(times), layers)
			}
			layers = len(times)
			if c.Times[tp] == nil {
				c.Times[tp] = map[int][]planner.LayerTime{}
			}
			c.Times[tp][mbs] = times
		}
	}
	if layers < 0 {
		return nil, 0, fileErrorf(file, "no microbatch sizes")
	}
	c.UpdatePerStage = uniformUpdate(c)
	return c, layers, nil
}

// uniformUpdate reports whether every entry of c repeats one optimizer-step time in all its
// layers: Sailor's profiles do (the step of the profiled stage, not a layer's share: it
// shrinks with TP but not with the layer count), and its simulator counts it once per stage.
func uniformUpdate(c *planner.Compute) bool {
	any := false
	for _, byMBS := range c.Times {
		for _, layers := range byMBS {
			for _, l := range layers[1:] {
				if l.Update != layers[0].Update {
					return false
				}
			}
			any = any || layers[0].Update > 0
		}
	}
	return any
}

// fillMissingMem gives m memory for the TP degrees c has and m lacks, from the model's
// architecture; without one it drops those entries of c. It returns notes on what it did.
func fillMissingMem(m *planner.ModelProfile, c *planner.Compute, file string) []string {
	var notes []string
	for _, tp := range sortedKeys(c.Times) {
		if _, ok := m.Mem[tp]; ok {
			continue
		}
		a, ok := sailorArchitecture(m.Name)
		var mem []planner.LayerMem
		if ok && a.NumLayers() == m.NumLayers() {
			mem = planner.TransformerMem(a, []int{tp})[tp]
		}
		if mem == nil {
			delete(c.Times, tp)
			notes = append(notes, fmt.Sprintf("%s: tp %d has no memory in %s and none can be computed; dropped", file, tp, sailorLLMInfo))
			continue
		}
		m.Mem[tp] = mem
		notes = append(notes, fmt.Sprintf("%s: tp %d has no memory in %s; computed with TransformerMem", file, tp, sailorLLMInfo))
	}
	return notes
}
