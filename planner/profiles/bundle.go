package profiles

import (
	"embed"
	"io/fs"
	"sync"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
)

// bundle is the part of Sailor's published data the built-in models need, in Sailor's
// layout (see sailor/README.md).
//
//go:embed sailor
var bundle embed.FS

// bundleRoot is how bundled files are named in messages.
const bundleRoot = "(bundled) planner/profiles/sailor"

func bundleSource() sailorSource {
	sub, err := fs.Sub(bundle, "sailor")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sailorSource{fsys: sub, root: bundleRoot}
}

// bundled caches the import of the bundle; callers get deep copies.
var bundled = sync.OnceValues(func() (*bundledData, error) {
	src := bundleSource()
	models, notes, err := importSailorModels(src)
	if err != nil {
		return nil, err
	}
	n, netNotes, err := importSailorNetwork(src)
	if err != nil {
		return nil, err
	}
	return &bundledData{models: models, network: n, notes: append(notes, netNotes...)}, nil
})

type bundledData struct {
	models  map[string]*planner.ModelProfile
	network *planner.Network
	notes   []string
}

// Bundled returns the bundled Sailor data, imported as ImportSailor and ImportSailorNetwork
// import a directory: measured profiles of the four built-in models and Sailor's network
// fits. The values are the caller's to change.
func Bundled() (map[string]*planner.ModelProfile, *planner.Network, error) {
	b, err := bundled()
	if err != nil {
		return nil, nil, err
	}
	models := make(map[string]*planner.ModelProfile, len(b.models))
	for k, m := range b.models {
		models[k] = cloneModel(m)
	}
	return models, cloneNetwork(b.network), nil
}

// cloneModel is a deep copy of m.
func cloneModel(m *planner.ModelProfile) *planner.ModelProfile {
	out := &planner.ModelProfile{Name: m.Name, SeqLen: m.SeqLen, Mem: map[int][]planner.LayerMem{}, Compute: map[gpu.Type]*planner.Compute{}}
	for tp, layers := range m.Mem {
		out.Mem[tp] = append([]planner.LayerMem(nil), layers...)
	}
	for g, c := range m.Compute {
		cc := &planner.Compute{GPU: c.GPU, Derived: c.Derived, Source: c.Source, UpdatePerStage: c.UpdatePerStage, Times: map[int]map[int][]planner.LayerTime{}}
		for tp, byMBS := range c.Times {
			cc.Times[tp] = map[int][]planner.LayerTime{}
			for mbs, times := range byMBS {
				cc.Times[tp][mbs] = append([]planner.LayerTime(nil), times...)
			}
		}
		out.Compute[g] = cc
	}
	out.MemoryModel = m.MemoryModel.Clone()
	return out
}

// cloneNetwork is a deep copy of n.
func cloneNetwork(n *planner.Network) *planner.Network {
	out := *n
	out.IntraNode = cloneLinkTable(n.IntraNode)
	out.InterNode = cloneLinkTable(n.InterNode)
	out.Zones = map[string]map[string]planner.Link{}
	for a, m := range n.Zones {
		out.Zones[a] = map[string]planner.Link{}
		for b, l := range m {
			out.Zones[a][b] = l
		}
	}
	out.Egress = map[string]map[string]float64{}
	for a, m := range n.Egress {
		out.Egress[a] = map[string]float64{}
		for b, v := range m {
			out.Egress[a][b] = v
		}
	}
	return &out
}

func cloneLinkTable(t map[gpu.Type]map[int]planner.Link) map[gpu.Type]map[int]planner.Link {
	out := make(map[gpu.Type]map[int]planner.Link, len(t))
	for g, m := range t {
		out[g] = make(map[int]planner.Link, len(m))
		for c, l := range m {
			out[g][c] = l
		}
	}
	return out
}
