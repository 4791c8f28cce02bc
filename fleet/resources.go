package fleet

import (
	"fmt"
	"slices"
	"strings"

	"github.com/schooner-ml/schooner/gpu"
)

// KnownClouds are the clouds a spec may name under resources.clouds.
var KnownClouds = []string{"aws", "gcp"}

// Resources restricts where a job (a training job, a serving deployment) may run; empty
// lists allow everything offered.
type Resources struct {
	Clouds   []string `json:"clouds,omitempty" yaml:"clouds,omitempty"`
	Regions  []string `json:"regions,omitempty" yaml:"regions,omitempty"`
	Zones    []string `json:"zones,omitempty" yaml:"zones,omitempty"`
	GPUTypes []string `json:"gpu_types,omitempty" yaml:"gpu_types,omitempty"`
	// InstanceTypes are the machine shapes a job may buy (p3.2xlarge, a2-highgpu-1g): a
	// replay of a trace of one shape, or a fleet kept to the machines an operator knows.
	InstanceTypes []string `json:"instance_types,omitempty" yaml:"instance_types,omitempty"`
	// MaxGPUs caps the GPUs held at once; 0 means the control plane's limit
	// (training.Limits.MaxGPUs, 4,096 by default).
	MaxGPUs int `json:"max_gpus,omitempty" yaml:"max_gpus,omitempty"`
}

// Check names every problem of r that needs no provider to see (unknown clouds and GPU types,
// empty names, a negative cap), as fields under "resources". Whether a region or zone exists
// is the provider's to say (trainingact.JobOfferings).
func (r Resources) Check(add func(field, problem string)) {
	for i, c := range r.Clouds {
		if !slices.Contains(KnownClouds, c) {
			add(fmt.Sprintf("resources.clouds[%d]", i), fmt.Sprintf("unknown cloud %q; known: %s", c, strings.Join(KnownClouds, ", ")))
		}
	}
	for i, g := range r.GPUTypes {
		if !gpu.Known(gpu.Type(g)) {
			known := make([]string, len(gpu.KnownTypes))
			for j, k := range gpu.KnownTypes {
				known[j] = string(k)
			}
			add(fmt.Sprintf("resources.gpu_types[%d]", i), fmt.Sprintf("unknown GPU type %q; known: %s", g, strings.Join(known, ", ")))
		}
	}
	for _, list := range []struct {
		field string
		names []string
	}{{"zones", r.Zones}, {"regions", r.Regions}, {"instance_types", r.InstanceTypes}} {
		for i, z := range list.names {
			if strings.TrimSpace(z) == "" {
				add(fmt.Sprintf("resources.%s[%d]", list.field, i), "must not be empty")
			}
		}
	}
	if r.MaxGPUs < 0 {
		add("resources.max_gpus", "must be ≥ 0 (0: the control plane's limit)")
	}
}

// SpotPolicy says which capacity types a job may buy.
type SpotPolicy string

const (
	// SpotOnly never buys on-demand capacity (the default).
	SpotOnly SpotPolicy = "spot"
	// SpotWithFallback adds on-demand capacity when spot cannot meet the job's target (a
	// training deadline; a serving deployment's stages).
	SpotWithFallback SpotPolicy = "spot-with-fallback"
	// OnDemandOnly is the baseline a user compares against.
	OnDemandOnly SpotPolicy = "on-demand"
)

// Check names the problem of an unknown policy under field.
func (p SpotPolicy) Check(field string, add func(field, problem string)) {
	switch p {
	case SpotOnly, SpotWithFallback, OnDemandOnly:
	default:
		add(field, fmt.Sprintf("must be one of %s, %s, %s (got %q)", SpotOnly, SpotWithFallback, OnDemandOnly, p))
	}
}
