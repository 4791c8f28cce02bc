package training

import "github.com/schooner-ml/schooner/cloud"

// BestOnDemandRequest asks the BestOnDemand local activity what the job would cost run start
// to end on its best on-demand plan: the plan the job's own planning finds over offers with
// spot left out, its iterations at that plan's pace and price, nothing lost to preemptions.
// It is the baseline a spot job's savings are measured against (JobStatus.BestOnDemandCostUSD):
// what a user who never touches spot would otherwise pay.
type BestOnDemandRequest struct {
	Model       Model  `json:"model"`
	SeqLen      int    `json:"seq_len,omitempty"`
	GlobalBatch int    `json:"global_batch"`
	Objective   string `json:"objective,omitempty"`
	// USDPerHourCap and MaxGPUs bound the plan as they bound the job's (0: no bound).
	USDPerHourCap float64          `json:"usd_per_hour_cap,omitempty"`
	MaxGPUs       int              `json:"max_gpus,omitempty"`
	Iterations    int64            `json:"iterations"`
	Offers        []cloud.Offering `json:"offers,omitempty"`
}

// BestOnDemandFor is the baseline question for spec over offers, with the job's GPU cap
// (maxGPUs: the spec's, or the control plane's limit when the spec sets none).
func BestOnDemandFor(spec Spec, maxGPUs int, offers []cloud.Offering) BestOnDemandRequest {
	return BestOnDemandRequest{Model: spec.Model, SeqLen: spec.SeqLen, GlobalBatch: spec.GlobalBatch, Objective: spec.Objective,
		USDPerHourCap: spec.Budget.USDPerHour, MaxGPUs: maxGPUs, Iterations: spec.Iterations, Offers: offers}
}

// PlanRequest is the planning question of the baseline: the job's, priced on demand alone.
func (r BestOnDemandRequest) PlanRequest() PlanJobRequest {
	return PlanJobRequest{Model: r.Model, SeqLen: r.SeqLen, GlobalBatch: r.GlobalBatch, Objective: r.Objective,
		USDPerHourCap: r.USDPerHourCap, MaxGPUs: r.MaxGPUs, Offers: r.Offers, OnDemand: true, SpotOff: true}
}

// OnDemandBaseline is the answer to a BestOnDemandRequest.
type OnDemandBaseline struct {
	// CostUSD is the whole job on the plan: iterations × seconds per iteration × $/h.
	CostUSD float64 `json:"cost_usd"`
	// Plan names the plan with its pace and price, for the status and the report.
	Plan        string  `json:"plan"`
	IterSeconds float64 `json:"iter_seconds"`
	USDPerHour  float64 `json:"usd_per_hour"`
}
