package sim

import "time"

// UseBundledTraces sets the bundled real AWS traces (see BundledTraces) as the spot capacity
// of their offerings: p3.2xlarge in us-east-2b, us-west-2a and us-west-2c replay what AWS
// actually allowed, while every other offering keeps the seeded on/off model. This is the
// market `schooner dev` and `schooner demo` run on.
func (c *Config) UseBundledTraces() error {
	traces, err := BundledTraces()
	if err != nil {
		return err
	}
	c.attachTraces(traces)
	return nil
}

// StartTracesAt starts the replay of every recorded trace (the bundled ones, a directory's)
// d into it instead of at its beginning: the market then meets the capacity a job started at
// that moment of the trace would have met, as `schooner policy eval` starts its runs at
// offsets into the same traces. A capacity set by hand is left alone.
func (c *Config) StartTracesAt(d time.Duration) {
	for k, cap := range c.Capacity {
		if cap.Trace != nil && cap.Trace.Source != "" {
			cap.Offset = d
			c.Capacity[k] = cap
		}
	}
}
