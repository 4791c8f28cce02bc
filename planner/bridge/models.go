package bridge

import (
	"fmt"
	"sync"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/profiles"
)

// DefaultSeqLen is the sequence length of a model given by its dimensions without one.
const DefaultSeqLen = 2048

// ModelRef names the model to plan for: a built-in profile by Name, or a decoder by its
// dimensions (Layers > 0), whose profile is derived from datasheets.
type ModelRef struct {
	Name                              string
	Layers, Hidden, Heads, FFN, Vocab int
	SeqLen                            int
}

// Models loads model profiles and the network profile from Dir ("" the bundled ones) once,
// and hands out one pointer per model so the planner's Replanner, whose cache is keyed by
// the profile's address, hits across calls. Safe for concurrent use.
type Models struct {
	Dir string

	mu      sync.Mutex
	models  map[ModelRef]*planner.ModelProfile
	network *planner.Network
}

// Profile returns the planner profile of m and the network profile.
func (c *Models) Profile(m ModelRef) (*planner.ModelProfile, *planner.Network, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.network == nil {
		n, err := profiles.LoadNetwork(c.Dir)
		if err != nil {
			return nil, nil, fmt.Errorf("loading the network profile: %w", err)
		}
		c.network = n
	}
	if p, ok := c.models[m]; ok {
		return p, c.network, nil
	}
	var p *planner.ModelProfile
	if m.Layers == 0 {
		var err error
		if p, err = profiles.Load(m.Name, c.Dir); err != nil {
			return nil, nil, fmt.Errorf("loading the profile of model %q: %w", m.Name, err)
		}
	} else {
		a := planner.Architecture{Name: m.Name, Layers: m.Layers, Hidden: m.Hidden, Heads: m.Heads, FFN: m.FFN,
			Vocab: m.Vocab, SeqLen: m.SeqLen}
		if a.Name == "" {
			a.Name = "custom"
		}
		if a.SeqLen == 0 {
			a.SeqLen = DefaultSeqLen
		}
		if err := a.Validate(); err != nil {
			return nil, nil, fmt.Errorf("building the profile of the model: %w", err)
		}
		p = planner.BuildModel(a, gpu.KnownTypes, planner.DefaultTPs(), planner.DefaultMicroBatches())
	}
	if c.models == nil {
		c.models = map[ModelRef]*planner.ModelProfile{}
	}
	c.models[m] = p
	return p, c.network, nil
}
