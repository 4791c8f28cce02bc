package sim

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
