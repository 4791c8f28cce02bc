package training

// Default values WithDefaults fills in.
const (
	ObjectiveThroughput = "throughput"
	ObjectiveCost       = "cost"
	TrainerSim          = "sim"
	TrainerCommand      = "command"
)

// WithDefaults returns the spec with the documented defaults filled in: objective
// throughput, spot policy spot, the simulated trainer. Submitting tools apply it before
// Validate so what the workflow receives is explicit.
func (s Spec) WithDefaults() Spec {
	if s.Objective == "" {
		s.Objective = ObjectiveThroughput
	}
	if s.Spot == "" {
		s.Spot = SpotOnly
	}
	if s.Trainer.Kind == "" {
		s.Trainer.Kind = TrainerSim
	}
	return s
}
