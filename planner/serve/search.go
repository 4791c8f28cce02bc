package serve

import (
	"cmp"
	"errors"
	"slices"
	"time"
)

// Search finds the cheapest configurations that meet req's targets: every GPU shape,
// tensor-parallel degree, pipeline depth and mode scored by the queueing model, the
// cheapest checked by simulation. It returns a *NoFitError when the model fits nothing and
// an *UnreachableError when no configuration meets a target.
func Search(req Request) (*Result, error) {
	start := time.Now()
	req = req.withDefaults()
	if err := req.validate(); err != nil {
		return nil, err
	}
	shapes := shapesOf(req.Offerings, req.AllowSpot, req.AssumeInstances)
	if len(shapes) == 0 {
		return nil, errors.New("no offering has a GPU type with a datasheet and a price")
	}
	e := &enumerator{req: req, ttft: req.Targets.TTFT.Seconds(), tpot: req.Targets.TPOT.Seconds()}
	var cands []candidate
	for i := range shapes {
		cands = append(cands, e.shape(&shapes[i])...)
	}
	if len(cands) == 0 {
		return nil, e.explain()
	}
	slices.SortStableFunc(cands, compareCandidates)
	c := checker{req: req, ttft: e.ttft, tpot: e.tpot, seen: map[string]bool{}, failed: map[string]int{}}
	plans := c.check(cands)
	if len(plans) == 0 {
		return nil, c.explain()
	}
	return &Result{Plans: plans[:min(len(plans), req.Top)], Targets: req.Targets, Assumptions: req.Assumptions,
		Considered: e.considered, Simulated: c.sims, Elapsed: time.Since(start)}, nil
}

// explain says why the queueing model found nothing: no fit, a target below the floor, a
// rate beyond the cap, or offerings too short.
func (e *enumerator) explain() error {
	f := e.floors
	switch {
	case !f.fits:
		return &NoFitError{Model: e.req.Model.Name, WeightBytes: WeightBytes(e.req.Model), LargestGPUBytes: f.largestGPU, MaxGPUs: e.req.MaxGPUs}
	case f.ttft > e.ttft:
		return &UnreachableError{Target: TargetTTFT, Want: e.ttft, Best: f.ttft, MaxGPUs: e.req.MaxGPUs}
	case f.tpot > e.tpot:
		return &UnreachableError{Target: TargetTPOT, Want: e.tpot, Best: f.tpot, MaxGPUs: e.req.MaxGPUs}
	case f.short:
		return &UnreachableError{Target: TargetCapacity, MaxGPUs: e.req.MaxGPUs}
	default:
		return &UnreachableError{Target: TargetRate, Want: e.req.Rate, Best: f.rate, MaxGPUs: e.req.MaxGPUs}
	}
}

func compareCandidates(a, b candidate) int {
	return cmp.Or(cmp.Compare(a.usd, b.usd), cmp.Compare(a.gpus, b.gpus), cmp.Compare(a.mode, b.mode),
		cmp.Compare(a.shape.gpu, b.shape.gpu), cmp.Compare(a.shape.per, b.shape.per))
}
