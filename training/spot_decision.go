package training

import (
	"time"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/policy"
)

// SpotDecisionRequest asks schooner's deadline policy (package policy, the code `schooner
// policy eval` simulates) what a running spot-with-fallback job with a deadline should hold:
// the ActivityDecideSpot local activity answers it with the planner's throughput of the
// job's model. Times are the provider's (simulated on the simulated market).
type SpotDecisionRequest struct {
	Model       Model                 `json:"model"`
	SeqLen      int                   `json:"seq_len,omitempty"`
	GlobalBatch int                   `json:"global_batch"`
	Running     policy.Running        `json:"running"`
	Offers      []cloud.Offering      `json:"offers"`
	Memory      policy.DeadlineMemory `json:"memory"`
}

// SpotDecision is the policy's answer (what to hold, why) and its memory for the next call.
type SpotDecision = policy.Decision

// PolicyEvery is how often, in the provider's time, a job under the deadline policy decides
// again while it trains (the policy simulator's step on the 16-node traces).
const PolicyEvery = 5 * time.Minute
