package planner

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"

	"github.com/schooner-ml/schooner/gpu"
)

// Sim predicts iteration time, cost and peak memory of plans for one model on one network.
// NewSim does the per-profile work once (running sums of per-layer times and memory for
// every GPU type, TP degree and micro-batch size), so that a stage's compute and memory are
// two subtractions and Simulate costs a few map look-ups per replica; the search calls it
// millions of times. A Sim is safe for concurrent use, as long as the model and network it
// was built from are not changed.
type Sim struct {
	model   *ModelProfile
	net     *Network
	layers  int
	compute map[computeKey]*computePrefix
	mem     []*memPrefix // indexed by TP degree; nil where unprofiled
	// links caches Network.Between by endpoint pair: the search asks about the same few
	// pairs millions of times, and a Between that compares links costs far more than a map
	// hit. The map is copied on write, so reads take no lock; pairs are few and written once.
	links   atomic.Pointer[map[linkKey]Link]
	linksMu sync.Mutex // serialises writers
}

type linkKey struct{ from, to Endpoint }

// link is s.net.Between(a, b), cached.
func (s *Sim) link(a, b Endpoint) Link {
	k := linkKey{from: a, to: b}
	if m := s.links.Load(); m != nil {
		if l, ok := (*m)[k]; ok {
			return l
		}
	}
	l := s.net.Between(a, b)
	s.linksMu.Lock()
	defer s.linksMu.Unlock()
	old := s.links.Load()
	next := make(map[linkKey]Link, 1+lenOf(old))
	if old != nil {
		for kk, v := range *old {
			next[kk] = v
		}
	}
	next[k] = l
	s.links.Store(&next)
	return l
}

func lenOf(m *map[linkKey]Link) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

type computeKey struct {
	gpu gpu.Type
	tp  int
	mbs int
}

// computePrefix holds running sums of one (GPU, TP, mbs) profile: fwdbwd[k] is the forward
// plus backward time of layers 0..k-1 for one microbatch.
type computePrefix struct {
	fwdbwd         []float64
	update         []float64
	updatePerStage bool // Compute.UpdatePerStage
	derived        bool
	memLimit       float64  // the GPU's memory; 0 when it has no datasheet
	mem            memCosts // the model's memory costs on this GPU type
}

// stageUpdate is the optimizer step of layers first..last: the sum of the layers' steps, or
// the first layer's value when the profile gives one step per stage (UpdatePerStage).
func (cp *computePrefix) stageUpdate(first, last int) float64 {
	if cp.updatePerStage {
		return cp.update[first+1] - cp.update[first]
	}
	return cp.update[last+1] - cp.update[first]
}

// NewSim prepares simulations of m on n. n may be nil for callers that only want
// StageCompute, StagePeakMemory or validation; Simulate then fails.
func NewSim(m *ModelProfile, n *Network) *Sim {
	s := &Sim{model: m, net: n, compute: map[computeKey]*computePrefix{}}
	if m == nil {
		return s
	}
	s.layers = m.NumLayers()
	for tp, layers := range m.Mem {
		if tp < 1 || len(layers) != s.layers {
			continue
		}
		for len(s.mem) <= tp {
			s.mem = append(s.mem, nil)
		}
		s.mem[tp] = newMemPrefix(layers)
	}
	for g, c := range m.Compute {
		if c == nil {
			continue
		}
		var limit float64
		if spec, ok := Spec(g); ok {
			limit = spec.MemoryBytes
		}
		mem := memCostsOf(m, g)
		for tp, byMBS := range c.Times {
			for mbs, layers := range byMBS {
				if len(layers) != s.layers {
					continue // explainCompute reports it if a plan asks for it
				}
				cp := &computePrefix{
					fwdbwd:         make([]float64, len(layers)+1),
					update:         make([]float64, len(layers)+1),
					updatePerStage: c.UpdatePerStage,
					derived:        c.Derived,
					memLimit:       limit,
					mem:            mem,
				}
				for i, l := range layers {
					cp.fwdbwd[i+1] = cp.fwdbwd[i] + l.Fwd + l.Bwd
					cp.update[i+1] = cp.update[i] + l.Update
				}
				s.compute[computeKey{gpu: g, tp: tp, mbs: mbs}] = cp
			}
		}
	}
	return s
}

// Simulate predicts a plan's iteration time, cost and peak memory; see Sim.Simulate.
func Simulate(p *Plan, m *ModelProfile, n *Network) (Estimate, error) {
	return NewSim(m, n).Simulate(p)
}

// StageCompute is the time for one microbatch's forward and backward passes through layers
// first..last on one replica of g at TP degree tp and micro-batch size mbs, and the
// optimizer step of those layers (see Compute.UpdatePerStage). TP communication is inside the profiled times. ok is
// false when the profile lacks (g, tp, mbs) or the range is outside the model.
func (s *Sim) StageCompute(g gpu.Type, tp, mbs, first, last int) (fwdbwd, update float64, ok bool) {
	cp := s.compute[computeKey{gpu: g, tp: tp, mbs: mbs}]
	if cp == nil || first < 0 || last < first || last >= s.layers {
		return 0, 0, false
	}
	return cp.fwdbwd[last+1] - cp.fwdbwd[first], cp.stageUpdate(first, last), true
}

// Simulate predicts what one training iteration of p costs in time, money and memory. It
// follows Sailor's model with 1F1B pipelines and extends it to uneven layer splits and to
// stages whose replicas differ in GPU type, TP degree or zone.
//
// Replica j of every stage forms pipeline j. Each pipeline runs
//
//	T_pp = (N_b − 1)·max_i(comp_i + comm_i) + Σ_i comm_i + Σ_i comp_i + max_i update_i
//
// with its own replicas' compute and links: comp_i is the profiled forward+backward time of
// stage i's layers for that replica's GPU type, TP degree and micro-batch size, and comm_i
// is what stage i sends per microbatch, activations to stage i+1 and gradients to stage
// i−1, each over the link Network.Between gives for the two replicas' endpoints. The
// pipelines wait for each other at the gradient all-reduce, so the iteration takes
// max_j T_pp + T_sync. Every stage all-reduces its gradients over its own D replicas at the
// same time as the other stages, so T_sync is the slowest stage's all-reduce (see
// AllReduceTime and the ring described at stageSync).
//
// Estimate.Stages reports each stage's worst replica: its slowest compute, slowest p2p,
// slowest update and largest peak memory. When all replicas of a stage are alike (every
// plan Sailor itself makes) this is exactly Sailor's estimate.
//
// Egress per iteration is the bytes that cross zones, activations and gradients between
// stages for all N_b microbatches plus all-reduce traffic between zones, priced by
// Network.EgressUSDPerGB. Invalid plans yield a *PlanError naming the stage and replica.
func (s *Sim) Simulate(p *Plan) (Estimate, error) {
	if s.model == nil || s.layers == 0 {
		return Estimate{}, errors.New("simulating plan, no model profile (or one without layers)")
	}
	if s.net == nil {
		return Estimate{}, errors.New("simulating plan, no network")
	}
	if err := p.checkShape(); err != nil {
		return Estimate{}, err
	}
	numStages := len(p.Stages)
	if last := p.Stages[numStages-1].LastLayer; last != s.layers-1 {
		return Estimate{}, s.coverageError(p)
	}
	d := len(p.Stages[0].Replicas)
	mbs := p.MicroBatch
	nb := p.Microbatches()

	est := Estimate{Stages: make([]StageEstimate, numStages), Fits: true}
	for i := range est.Stages {
		est.Stages[i].Fits = true
	}

	var pipeline, egress, usdPerHour float64
	var seenBuf [8]seenPipeline
	seen := seenBuf[:0]
pipelines:
	for j := 0; j < d; j++ {
		for _, sp := range seen {
			if samePipeline(p, sp.index, j) {
				egress += sp.egress
				usdPerHour += sp.usdPerHour
				continue pipelines
			}
		}
		var pipeEgress, pipeUSD float64
		var sumComp, sumComm, straggler, maxUpdate float64
		var gradIn float64 // time stage i spends sending gradients back to stage i-1
		for i := 0; i < numStages; i++ {
			st := &p.Stages[i]
			r := &st.Replicas[j]
			cp := s.compute[computeKey{gpu: r.GPU, tp: r.TP, mbs: mbs}]
			mp := s.memFor(r.TP)
			if cp == nil || mp == nil {
				return Estimate{}, s.explainMissing(i, j, r, mbs)
			}
			comp := cp.fwdbwd[st.LastLayer+1] - cp.fwdbwd[st.FirstLayer]
			update := cp.stageUpdate(st.FirstLayer, st.LastLayer)

			comm := gradIn
			gradIn = 0
			if i+1 < numStages {
				next := &p.Stages[i+1].Replicas[j]
				bytes := mp.actOutput[st.LastLayer] * float64(mbs) * BytesPerFloat
				a, b := r.Endpoint(), next.Endpoint()
				comm += s.link(a, b).Time(bytes)
				gradIn = s.link(b, a).Time(bytes)
				if a.Zone != b.Zone {
					gb := float64(nb) * bytes / 1e9
					pipeEgress += gb * (s.net.EgressUSDPerGB(a, b) + s.net.EgressUSDPerGB(b, a))
				}
			}

			sumComp += comp
			sumComm += comm
			straggler = math.Max(straggler, comp+comm)
			maxUpdate = math.Max(maxUpdate, update)
			pipeUSD += float64(r.TP) * r.USDPerGPUHour

			se := &est.Stages[i]
			se.Compute = math.Max(se.Compute, comp)
			se.Comm = math.Max(se.Comm, comm)
			se.Update = math.Max(se.Update, update)
			mem := cp.mem.stageMemory(mp.params[st.LastLayer+1]-mp.params[st.FirstLayer], mp.act[st.LastLayer+1]-mp.act[st.FirstLayer],
				mbs, i, numStages, nb)
			se.PeakMemBytes = math.Max(se.PeakMemBytes, mem)
			if cp.memLimit > 0 {
				if se.MemLimitBytes == 0 || cp.memLimit < se.MemLimitBytes {
					se.MemLimitBytes = cp.memLimit
				}
				if mem > cp.memLimit {
					se.Fits = false
					est.Fits = false
				}
			}
			if cp.derived {
				est.Derived = true
			}
		}
		t := float64(nb-1)*straggler + sumComm + sumComp + maxUpdate
		pipeline = math.Max(pipeline, t)
		egress += pipeEgress
		usdPerHour += pipeUSD
		if len(seen) < cap(seenBuf) {
			seen = append(seen, seenPipeline{index: j, egress: pipeEgress, usdPerHour: pipeUSD})
		}
	}

	var sync float64
	for i := range p.Stages {
		t, usd := s.stageSync(&p.Stages[i])
		sync = math.Max(sync, t)
		egress += usd
	}

	est.PipelineTime = pipeline
	est.SyncTime = sync
	est.IterTime = pipeline + sync
	if !(est.IterTime > 0) || math.IsInf(est.IterTime, 0) {
		return Estimate{}, errors.New("simulating plan, the profiles give an iteration time of zero (or not a number): check the compute profile's times")
	}
	est.Throughput = 1 / est.IterTime
	est.USDPerHour = usdPerHour
	est.EgressUSDPerIteration = egress
	est.USDPerIteration = usdPerHour*est.IterTime/3600 + egress
	return est, nil
}

// seenPipeline remembers a simulated pipeline so that later pipelines made of the same
// replicas (the common case: stages whose replicas are alike, or a few kinds alternating)
// are not simulated again. Their times and memory change nothing; egress and price add up.
type seenPipeline struct {
	index              int
	egress, usdPerHour float64
}

// samePipeline reports whether pipelines a and b are made of the same replicas.
func samePipeline(p *Plan, a, b int) bool {
	for i := range p.Stages {
		if p.Stages[i].Replicas[a] != p.Stages[i].Replicas[b] {
			return false
		}
	}
	return true
}
