package profiles

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/internal/jsonerr"
	"github.com/schooner-ml/schooner/planner"
)

// NetworkFileName is the network profile's name inside a profiles directory; every other
// *.json file there is a model profile.
const NetworkFileName = "network.json"

// Load returns the profile of the model called name (a built-in model's name or alias, or
// the name in a model file of dir) with a compute table for every GPU type that has a
// planner.Spec: measured where dir has measurements, derived (and flagged Derived) for the
// rest. dir is a profiles directory in schooner's format, a folder in Sailor's layout (it
// holds Planner/llm_info.json), or "" for the bundled Sailor data; a model a directory in
// schooner's format lacks comes from the bundle.
//
// Derived compute needs the model's architecture: the file's, else Sailor's for Sailor
// data, else the built-in one. Memory for TP degrees the measured data lacks is computed
// with planner.TransformerMem. A model file without an architecture, of a model that is
// not built in, is returned with its measured compute only.
func Load(name, dir string) (*planner.ModelProfile, error) {
	canon, builtin := planner.ResolveModelName(name)
	if !builtin {
		canon = name
	}
	m, arch, known, err := findModel(canon, name, dir)
	if err != nil {
		return nil, err
	}
	if m == nil {
		if !builtin {
			return nil, fmt.Errorf("unknown model %q; known models: %s", name, strings.Join(known, ", "))
		}
		a, _ := planner.BuiltinArchitecture(canon)
		arch = &a
		m = &planner.ModelProfile{Name: a.Name, SeqLen: a.SeqLen, Mem: planner.TransformerMem(a, planner.DefaultTPs()),
			Compute: map[gpu.Type]*planner.Compute{}}
	}
	if arch != nil {
		if err := deriveMissing(m, *arch); err != nil {
			return nil, err
		}
	}
	if err := checkModel(m); err != nil {
		return nil, fmt.Errorf("loading model %s, %w", m.Name, err)
	}
	return m, nil
}

// findModel looks for measured data of the model in dir (see Load). It returns nil when
// there is none, and the names of the models it saw, for an error message.
func findModel(canon, name, dir string) (*planner.ModelProfile, *planner.Architecture, []string, error) {
	known := planner.BuiltinModels()
	sailorArch := func(model string) *planner.Architecture {
		if a, ok := sailorArchitecture(model); ok {
			return &a
		}
		return nil
	}
	fromBundle := func() (*planner.ModelProfile, *planner.Architecture, []string, error) {
		models, _, err := Bundled()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("importing bundled Sailor data, %w", err)
		}
		return models[canon], sailorArch(canon), known, nil
	}
	if dir == "" {
		return fromBundle()
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading profiles directory, %w", err)
	}
	if !st.IsDir() {
		return nil, nil, nil, fmt.Errorf("profiles directory %s is not a directory", dir)
	}
	if isSailorDir(dir) {
		models, err := ImportSailor(dir)
		if err != nil {
			return nil, nil, nil, err
		}
		for k := range models {
			known = appendNew(known, k)
		}
		sort.Strings(known)
		return models[canon], sailorArch(canon), known, nil
	}
	files, err := modelFiles(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, path := range files {
		fileName, err := peekName(path)
		if err != nil {
			return nil, nil, nil, err
		}
		known = appendNew(known, fileName)
		if fileName != canon && fileName != name {
			if c, ok := planner.ResolveModelName(fileName); !ok || c != canon {
				continue
			}
		}
		f, err := ReadModelFile(path)
		if err != nil {
			return nil, nil, nil, err
		}
		arch := f.Architecture
		if a, ok := planner.BuiltinArchitecture(canon); ok {
			f.Name = canon // a file may use an alias
			if arch == nil && a.NumLayers() == f.NumLayers() {
				arch = &a
			}
		}
		return &f.ModelProfile, arch, known, nil
	}
	if _, ok := planner.ResolveModelName(canon); ok {
		return fromBundle()
	}
	sort.Strings(known)
	return nil, nil, known, nil
}

// deriveMissing adds what a's architecture can supply: memory for the default TP degrees and
// derived compute for every GPU type with a Spec and no compute table.
func deriveMissing(m *planner.ModelProfile, a planner.Architecture) error {
	if err := a.Validate(); err != nil {
		return fmt.Errorf("loading model %s, %w", m.Name, err)
	}
	if n := m.NumLayers(); n != 0 && a.NumLayers() != n {
		return fmt.Errorf("loading model %s, its architecture has %d layers and its profile %d", m.Name, a.NumLayers(), n)
	}
	tps := map[int]bool{}
	for tp := range m.Mem {
		tps[tp] = true
	}
	for _, tp := range planner.DefaultTPs() {
		tps[tp] = true
	}
	mbss := map[int]bool{}
	for _, mbs := range planner.DefaultMicroBatches() {
		mbss[mbs] = true
	}
	for _, c := range m.Compute {
		for tp, byMBS := range c.Times {
			tps[tp] = true
			for mbs := range byMBS {
				mbss[mbs] = true
			}
		}
	}
	tpList := sortedKeys(tps)
	mbsList := sortedKeys(mbss)
	for tp, mem := range planner.TransformerMem(a, tpList) {
		if _, ok := m.Mem[tp]; !ok {
			m.Mem[tp] = mem
		}
	}
	if m.Compute == nil {
		m.Compute = map[gpu.Type]*planner.Compute{}
	}
	for _, g := range gpu.KnownTypes {
		if m.Compute[g] != nil {
			continue
		}
		spec, ok := planner.Spec(g)
		if !ok {
			continue
		}
		if c := planner.DeriveCompute(a, spec, tpList, mbsList); c != nil {
			m.Compute[g] = c
		}
	}
	return nil
}

// isSailorDir reports whether dir is laid out as Sailor's repository.
func isSailorDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(sailorLLMInfo)))
	return err == nil
}

// modelFiles lists dir's model profile files: *.json except the network profile.
func modelFiles(dir string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("listing %s, %w", dir, err)
	}
	var files []string
	for _, p := range matches {
		if filepath.Base(p) != NetworkFileName {
			files = append(files, p)
		}
	}
	sort.Strings(files)
	return files, nil
}

// peekName reads only the name of a model profile file.
func peekName(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading profile, %w", err)
	}
	var head struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return "", &FileError{Path: path, Err: jsonerr.Describe(data, err)}
	}
	if head.Name == "" {
		return "", fileErrorf(path, "model profile has no name")
	}
	return head.Name, nil
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// LoadNetwork returns the network profile for dir: planner.DefaultNetwork with Sailor's
// measurements merged over it (the bundled copy, or dir's when dir is in Sailor's layout),
// and then dir/network.json, if there is one, merged over that.
func LoadNetwork(dir string) (*planner.Network, error) {
	n := planner.DefaultNetwork()
	if dir != "" {
		st, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("reading profiles directory, %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("profiles directory %s is not a directory", dir)
		}
		if _, err := os.Stat(filepath.Join(dir, "providers")); err == nil {
			s, err := ImportSailorNetwork(dir)
			if err != nil {
				return nil, err
			}
			return MergeNetwork(n, s), nil
		}
	}
	_, s, err := Bundled()
	if err != nil {
		return nil, fmt.Errorf("importing bundled Sailor network data, %w", err)
	}
	n = MergeNetwork(n, s)
	if dir == "" {
		return n, nil
	}
	path := filepath.Join(dir, NetworkFileName)
	own, err := ReadNetwork(path)
	if errors.Is(err, os.ErrNotExist) {
		return n, nil
	}
	if err != nil {
		return nil, err
	}
	return MergeNetwork(n, own), nil
}

// MergeNetwork is base with over's data on top: every link and price over has replaces
// base's for the same GPU type and machine size, or zone pair; over's InterZone,
// InterRegion and default egress prices replace base's when they are set (non-zero).
// Neither argument is changed.
func MergeNetwork(base, over *planner.Network) *planner.Network {
	out := cloneNetwork(base)
	if over == nil {
		return out
	}
	mergeLinks := func(dst, src map[gpu.Type]map[int]planner.Link) {
		for g, m := range src {
			if dst[g] == nil {
				dst[g] = map[int]planner.Link{}
			}
			for c, l := range m {
				dst[g][c] = l
			}
		}
	}
	mergeLinks(out.IntraNode, over.IntraNode)
	mergeLinks(out.InterNode, over.InterNode)
	for a, m := range over.Zones {
		if out.Zones[a] == nil {
			out.Zones[a] = map[string]planner.Link{}
		}
		for b, l := range m {
			out.Zones[a][b] = l
		}
	}
	for a, m := range over.Egress {
		if out.Egress[a] == nil {
			out.Egress[a] = map[string]float64{}
		}
		for b, v := range m {
			out.Egress[a][b] = v
		}
	}
	if over.InterZone != (planner.Link{}) {
		out.InterZone = over.InterZone
	}
	if over.InterRegion != (planner.Link{}) {
		out.InterRegion = over.InterRegion
	}
	if over.EgressInterZone != 0 {
		out.EgressInterZone = over.EgressInterZone
	}
	if over.EgressInterRegion != 0 {
		out.EgressInterRegion = over.EgressInterRegion
	}
	if over.EgressInterContinent != 0 {
		out.EgressInterContinent = over.EgressInterContinent
	}
	return out
}
