package stack

import "github.com/schooner-ml/schooner/cloud/sim"

// NewMarket builds the simulated market a stack with o runs (Seed, TimeScale, Params,
// NoTraces, TraceDir, TraceStart, Usage), without starting its clock, and names the trace files left
// out. It is exported for `schooner dev --only market`, which serves the same market in a
// process of its own, so a cluster test can kill the Temporal server without losing the
// cloud.
func NewMarket(o Options) (*sim.Market, []string, error) {
	if o.TimeScale == 0 {
		o.TimeScale = 1
	}
	cfg := sim.Config{Seed: o.Seed, TimeScale: o.TimeScale, Params: o.Params, Usage: o.Usage}
	var skipped []string
	switch {
	case o.TraceDir != "":
		var err error
		if skipped, err = cfg.AttachSkyPilotDir(o.TraceDir); err != nil {
			return nil, nil, err
		}
	case !o.NoTraces:
		if err := cfg.UseBundledTraces(); err != nil {
			return nil, nil, err
		}
	}
	cfg.StartTracesAt(o.TraceStart)
	m, err := sim.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	return m, skipped, nil
}
