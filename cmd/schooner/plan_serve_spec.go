package main

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/serve"
	"github.com/schooner-ml/schooner/serving"
)

// A serving plan as a ServingDeployment spec (`plan serve --write-spec`). The spec's unit is
// one inference worker per (replica, stage), each on a machine of its own, holding its layers
// on one GPU: the worker has no tensor parallelism and the workflow places one stage per
// machine. So a plan is written only when it is that, exactly: one stage per one-GPU machine
// (runPlanServe plans on one-GPU machines only when writing), and a prompt and a token pool
// of the same depth (the spec's pools share `stages`: the KV-cache holders key a replica by
// stage). Anything else would be bought or run differently from what was estimated (four
// times the machines, a stage that does not fit its GPU), so it is refused, naming what the
// spec cannot say. What the spec says more loosely than the plan (zones and capacity per
// pool, a replica's stages kept in one zone) leaves the configuration as planned but lets
// the deployment choose where: the spec is written, and every such difference is printed
// and written into the file's header.

// specInputs are the planner's inputs the spec carries beyond the plan itself.
type specInputs struct {
	arch           planner.Architecture
	prompt, output int
	targets        serve.Targets
}

// unexpressibleError says why a plan cannot be a spec; Writable are the ranks (1-based) of
// the Shown plans that can, for the hint.
type unexpressibleError struct {
	Rank     int
	Reasons  []string
	Writable []int
	Shown    int
}

func (e *unexpressibleError) Error() string {
	msg := fmt.Sprintf("plan %d cannot be written as a ServingDeployment spec: %s", e.Rank, strings.Join(e.Reasons, "; "))
	switch {
	case len(e.Writable) > 0:
		msg += fmt.Sprintf(" (plan %d of those shown can: --pick %d)", e.Writable[0], e.Writable[0])
	case e.Shown > 0:
		msg += " (none of those shown can: raise --top to see more)"
	}
	return msg
}

// unexpressible lists what p has that a spec cannot say; empty when it can be written.
func unexpressible(p serve.Plan) []string {
	var out []string
	if p.GPUsPerInstance > 1 {
		out = append(out, fmt.Sprintf("it packs stages onto %s machines of %d GPUs, and a spec runs one stage per machine, on one GPU",
			p.GPU, p.GPUsPerInstance))
	}
	for _, pool := range p.Pools {
		if pool.TP > 1 {
			out = append(out, fmt.Sprintf("the %s pool splits each stage over %d GPUs (TP%d), and a spec's inference worker has no tensor parallelism",
				poolName(pool.Role), pool.TP, pool.TP))
		}
	}
	if len(p.Pools) == 2 && p.Pools[0].Stages != p.Pools[1].Stages {
		out = append(out, fmt.Sprintf("its prompt pool has %d stages and its token pool %d, and a spec's pools share one `stages`",
			p.Pools[0].Stages, p.Pools[1].Stages))
	}
	return out
}

// specModel is the spec's model for a: a built-in of the inference worker with the same
// dimensions, else a's dimensions; an error when a is not the Llama-style decoder (SwiGLU
// MLP, rotary positions) the worker runs.
func specModel(a planner.Architecture) (serving.Model, error) {
	if !a.GatedMLP || !a.Rotary {
		return serving.Model{}, fmt.Errorf("%s is not a Llama-style decoder (SwiGLU MLP, rotary positions), the only kind the inference worker runs; built in: %s",
			a.Name, strings.Join(slices.Sorted(maps.Keys(serving.BuiltinModels)), ", "))
	}
	kv := a.KVHeads
	if kv == 0 {
		kv = a.Heads
	}
	m := serving.Model{Layers: a.Layers, Hidden: a.Hidden, Heads: a.Heads, KVHeads: kv, FFN: a.FFN, Vocab: a.Vocab}
	for _, name := range slices.Sorted(maps.Keys(serving.BuiltinModels)) {
		if serving.BuiltinModels[name] == m {
			return serving.Model{Name: name}, nil
		}
	}
	return m, nil
}

// specFromPlan is the spec that deploys p (rank is its place in the list, for messages), and
// the differences between what the spec lets the deployment do and what p planned; an
// *unexpressibleError when the spec cannot say p, and the spec's own validation error when
// the spec would break a bound (more replicas than a deployment may have).
func specFromPlan(p serve.Plan, rank int, in specInputs) (serving.Spec, []string, error) {
	if reasons := unexpressible(p); len(reasons) > 0 {
		return serving.Spec{}, nil, &unexpressibleError{Rank: rank, Reasons: reasons}
	}
	model, err := specModel(in.arch)
	if err != nil {
		return serving.Spec{}, nil, err
	}
	decode := p.Pools[len(p.Pools)-1] // the colocated pool, or the token pool after the prompt pool
	s := serving.Spec{Name: specName(model, in.arch), Model: model, Stages: decode.Stages, Replicas: decode.Replicas,
		Resources: resourcesOf(p), Spot: spotOf(p), MaxBatch: decode.MaxBatch, MaxContext: in.prompt + in.output,
		KVReplication: serving.ReplicationOn,
		Latency:       serving.Latency{TTFTMillis: millis(in.targets.TTFT), TPOTMillis: millis(in.targets.TPOT)}}
	if p.Mode == serve.Disaggregated {
		s.PrefillReplicas = p.Pools[0].Replicas
	}
	var notes []string
	if s.MaxBatch > serving.MaxBatchLimit {
		notes = append(notes, fmt.Sprintf("max_batch is %d, the most a spec allows; the plan let a replica hold %d sequences",
			serving.MaxBatchLimit, s.MaxBatch))
		s.MaxBatch = serving.MaxBatchLimit
	}
	if err := s.WithDefaults().Validate(); err != nil {
		return serving.Spec{}, nil, fmt.Errorf("plan %d as a spec: %w", rank, err)
	}
	return s, append(notes, placementNotes(p, s)...), nil
}

// resourcesOf restricts the deployment to what p buys: its GPU type, the zones and instance
// types of its placements, and their clouds where the spec knows them (an offerings file may
// name others; the zones still hold).
func resourcesOf(p serve.Plan) fleet.Resources {
	var clouds, zones, types []string
	for _, pool := range p.Pools {
		for _, pl := range pool.Placements {
			clouds, zones, types = append(clouds, pl.Provider), append(zones, pl.Zone), append(types, pl.InstanceType)
		}
	}
	r := fleet.Resources{GPUTypes: []string{string(p.GPU)}, Zones: sortedSet(zones), InstanceTypes: sortedSet(types)}
	if clouds = sortedSet(clouds); !slices.ContainsFunc(clouds, func(c string) bool { return !slices.Contains(fleet.KnownClouds, c) }) {
		r.Clouds = clouds
	}
	return r
}

// spotOf: a plan with spot capacity was planned as spot first, on-demand where the spot
// capacity runs short, which is spot-with-fallback; one without is on-demand.
func spotOf(p serve.Plan) fleet.SpotPolicy {
	if p.Spot {
		return fleet.SpotWithFallback
	}
	return fleet.OnDemandOnly
}

// placementNotes are where the deployment may place differently from p: the spec's zones and
// spot policy hold for every stage of both pools, and the workflow spreads a replica's
// stages over zones where the planner kept them in one.
func placementNotes(p serve.Plan, s serving.Spec) []string {
	var notes, where []string
	apart := false // some pool keeps to fewer zones than the spec lists
	for _, pool := range p.Pools {
		var zones []string
		for _, pl := range pool.Placements {
			zones = append(zones, pl.Zone)
		}
		zones = sortedSet(zones)
		apart = apart || !slices.Equal(zones, s.Resources.Zones)
		where = append(where, fmt.Sprintf("the %s pool in %s", poolName(pool.Role), strings.Join(zones, ", ")))
	}
	if len(p.Pools) > 1 && apart {
		notes = append(notes, fmt.Sprintf("the plan places %s; the spec's zones hold for both pools, so the deployment may place either in any of them",
			strings.Join(where, " and ")))
	}
	for _, pool := range p.Pools {
		if s.Spot == fleet.SpotWithFallback && pool.Capacity != "spot" {
			notes = append(notes, fmt.Sprintf("the plan buys the %s pool %s where the offerings' spot capacity ran short; the deployment takes spot wherever it finds it and on-demand only where it finds none",
				poolName(pool.Role), pool.Capacity))
		}
	}
	if s.Stages > 1 && len(s.Resources.Zones) > 1 {
		notes = append(notes, "the plan keeps a replica's stages in one zone; the deployment spreads them over the spec's zones (one zone's preemption then takes no whole pipeline), so stage-to-stage traffic the estimate did not count may cross zones")
	}
	return notes
}

func poolName(r serve.Role) string {
	if r == serve.RoleBoth {
		return "colocated"
	}
	return string(r)
}

var nameInvalid = regexp.MustCompile(`[^a-z0-9-]+`)

// specName labels the deployment after its model: the built-in's name, or a's made valid.
func specName(m serving.Model, a planner.Architecture) string {
	if m.Name != "" {
		return m.Name
	}
	n := strings.Trim(nameInvalid.ReplaceAllString(strings.ToLower(a.Name), "-"), "-")
	if len(n) > 40 {
		n = strings.TrimRight(n[:40], "-")
	}
	if n == "" {
		n = "serve"
	}
	return n
}

// millis is d in the spec's unit, unrounded: rounding a target up would loosen it.
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func sortedSet(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}
