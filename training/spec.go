package training

import "github.com/schooner-ml/schooner/fleet"

// Spec is a training job as a user submits it (examples/ holds annotated ones). Durations and
// times are strings so YAML and JSON read the same; Validate parses them and names the field of
// any error.
type Spec struct {
	// Name is a label for people; the job id is chosen at submission.
	Name  string `json:"name" yaml:"name"`
	Model Model  `json:"model" yaml:"model"`
	// GlobalBatch is samples per iteration.
	GlobalBatch int `json:"global_batch" yaml:"global_batch"`
	// SeqLen is the sequence length; 0 means the model's default.
	SeqLen int `json:"seq_len,omitempty" yaml:"seq_len,omitempty"`
	// Iterations is how many optimizer steps the job runs in total.
	Iterations int64 `json:"iterations" yaml:"iterations"`
	// Objective is "throughput" (default) or "cost".
	Objective string `json:"objective,omitempty" yaml:"objective,omitempty"`
	Budget    Budget `json:"budget,omitempty" yaml:"budget,omitempty"`
	// Deadline is a duration from submission ("6h") or an RFC 3339 time; empty means none.
	Deadline   string     `json:"deadline,omitempty" yaml:"deadline,omitempty"`
	Resources  Resources  `json:"resources,omitempty" yaml:"resources,omitempty"`
	Spot       SpotPolicy `json:"spot,omitempty" yaml:"spot,omitempty"`
	Checkpoint Checkpoint `json:"checkpoint" yaml:"checkpoint"`
	Trainer    Trainer    `json:"trainer,omitempty" yaml:"trainer,omitempty"`
}

// Model names a built-in model (planner.BuiltinModels) or gives a decoder's dimensions.
type Model struct {
	Name   string `json:"name,omitempty" yaml:"name,omitempty"`
	Layers int    `json:"layers,omitempty" yaml:"layers,omitempty"`
	Hidden int    `json:"hidden,omitempty" yaml:"hidden,omitempty"`
	Heads  int    `json:"heads,omitempty" yaml:"heads,omitempty"`
	FFN    int    `json:"ffn,omitempty" yaml:"ffn,omitempty"`
	Vocab  int    `json:"vocab,omitempty" yaml:"vocab,omitempty"`
}

// Budget caps spending; zero fields are no cap.
type Budget struct {
	USDPerHour float64 `json:"usd_per_hour,omitempty" yaml:"usd_per_hour,omitempty"`
	TotalUSD   float64 `json:"total_usd,omitempty" yaml:"total_usd,omitempty"`
}

// Resources restricts where the job may run (fleet.Resources: serving shares it).
type Resources = fleet.Resources

// SpotPolicy says which capacity types the job may buy (fleet.SpotPolicy).
type SpotPolicy = fleet.SpotPolicy

// The spot policies, as fleet names them.
const (
	SpotOnly         = fleet.SpotOnly
	SpotWithFallback = fleet.SpotWithFallback
	OnDemandOnly     = fleet.OnDemandOnly
)

// Checkpoint says how often the trainers checkpoint and where durable copies go.
type Checkpoint struct {
	// Every is the interval in iterations.
	Every int64 `json:"every" yaml:"every"`
	// Store is an object store URL (s3://bucket/prefix?endpoint=..., file:///dir); it must
	// outlive the machines.
	Store string `json:"store" yaml:"store"`
}

// Trainer says what runs on every instance.
type Trainer struct {
	// Kind is "sim" (the simulated trainer, the default) or "command".
	Kind string `json:"kind,omitempty" yaml:"kind,omitempty"`
	// Command is the program and arguments for Kind "command"; it gets the plan in SCHOONER_*
	// environment variables and the checkpoint agent's socket.
	Command []string          `json:"command,omitempty" yaml:"command,omitempty"`
	Env     map[string]string `json:"env,omitempty" yaml:"env,omitempty"`
	// Seed makes the simulated trainer's state reproducible.
	Seed int64 `json:"seed,omitempty" yaml:"seed,omitempty"`
}

// params estimates the parameters of a decoder given by its dimensions: per layer the
// attention projections (4·hidden²) and the two MLP matrices (2·hidden·ffn), plus the
// embedding (vocab·hidden). It is a bound for limits, not a memory model.
func (m Model) params() float64 {
	h, f := float64(m.Hidden), float64(m.FFN)
	return float64(m.Layers)*(4*h*h+2*h*f) + float64(m.Vocab)*h
}
