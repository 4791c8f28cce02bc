package report

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/schooner-ml/schooner/internal/defaults"
	"github.com/schooner-ml/schooner/policy"
	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/serving/router"
)

// This file is the serving half of the package: what `schooner demo serve` measured (every
// request of a load run beside its failure-free reference, the faults it injected, the
// deployment's final status) turned into a summary, a Markdown report and an SVG timeline.

// ServeRequest is one completion of the load: what was asked, when it was sent and answered,
// and its text beside the failure-free reference's.
type ServeRequest struct {
	Index       int     `json:"index"`
	Prompt      int     `json:"prompt"` // index into the demo's prompt list
	MaxTokens   int     `json:"max_tokens"`
	Temperature float64 `json:"temperature"`
	Seed        int64   `json:"seed"`
	// Due is the scheduled send time, as an offset from the start of the load.
	Due time.Duration `json:"due_ns"`
	// Start, FirstToken and End are wall times (FirstToken zero when no text came).
	Start      time.Time `json:"start"`
	FirstToken time.Time `json:"first_token,omitempty"`
	End        time.Time `json:"end"`
	// Chunks are the arrival times of the stream's chunks that carried text.
	Chunks []time.Time `json:"-"`
	Text   string      `json:"-"`
	// Reference is the text of the same request streamed against the healthy deployment.
	Reference string `json:"-"`
	Error     string `json:"error,omitempty"`
}

// MaxGap is the longest wait between two text chunks (0 with fewer than two).
func (r ServeRequest) MaxGap() time.Duration {
	var g time.Duration
	for i := 1; i < len(r.Chunks); i++ {
		g = max(g, r.Chunks[i].Sub(r.Chunks[i-1]))
	}
	return g
}

// Matches says whether the request succeeded with exactly its reference's text.
func (r ServeRequest) Matches() bool { return r.Error == "" && r.Text == r.Reference }

// ServeFault is one fault the demo injected: a stage's machine preempted, with or without
// the provider's notice, and the deployment's record of replacing it (zero until found).
type ServeFault struct {
	Stage    int       `json:"stage"`
	Instance string    `json:"instance"`
	Notice   bool      `json:"notice"`
	Injected time.Time `json:"injected"`
	// InFlight is the number of requests mid-generation when it was injected.
	InFlight int               `json:"in_flight"`
	Failover *serving.Failover `json:"failover,omitempty"`
}

// Window is the span the fault can affect clients: from the injection to the replacement's
// stage-ready (plus slack for the router to follow the new address); end is zero when no
// failover was recorded, and then the window runs to the end of the load.
func (f ServeFault) Window(slack time.Duration, loadEnd time.Time) (time.Time, time.Time) {
	if f.Failover == nil || f.Failover.ReadyAt.IsZero() {
		return f.Injected, loadEnd
	}
	end := f.Failover.ReadyAt.Add(slack)
	if end.Before(f.Injected) {
		end = f.Injected
	}
	return f.Injected, end
}

// ServeFacts is everything the demo observed.
type ServeFacts struct {
	Deployment string `json:"deployment"`
	Model      string `json:"model"`
	Stages     int    `json:"stages"`
	// Policy is how the deployment used spot (demo serve --policy).
	Policy    string  `json:"policy,omitempty"`
	Rate      float64 `json:"rate"`
	Duration  time.Duration
	TimeScale float64
	Wall      time.Duration
	// LoadStart is when the load began; Requests are the load run's, in schedule order.
	LoadStart time.Time
	Requests  []ServeRequest
	Faults    []ServeFault
	// PlannedFaults is how many faults the demo meant to inject.
	PlannedFaults int
	// ReferenceErrors counts reference requests that failed (the comparison is then void).
	ReferenceErrors int
	Final           serving.Status
	Counters        router.Counters
	// LeakedInstances are instances still tagged with the deployment after the stop.
	LeakedInstances int
	// Slack widens each fault window past the replacement's readiness (FaultSlack when 0).
	Slack time.Duration
}

// FaultSlack is the default widening of a fault window past the replacement's readiness: the
// router follows the deployment by polling, and resubmitted requests need their first token.
const FaultSlack = 2 * time.Second

// Percentiles are p50, p99 and the maximum, in milliseconds.
type Percentiles struct {
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// FaultSummary is one injected fault as the report shows it.
type FaultSummary struct {
	Stage    int       `json:"stage"`
	Notice   bool      `json:"notice"`
	From     string    `json:"from"`
	To       string    `json:"to,omitempty"`
	Injected time.Time `json:"injected"`
	// AtSeconds is the injection as seconds into the load.
	AtSeconds float64 `json:"at_s"`
	InFlight  int     `json:"in_flight"`
	// FailoverSeconds is the deployment's own measure, from the loss being seen (or the
	// notice) to the replacement's stage-ready; DowntimeSeconds the part without a ready
	// stage; InjectedToReadySeconds from the injection to the replacement's stage-ready.
	Recorded               bool    `json:"recorded"`
	FailoverSeconds        float64 `json:"failover_s"`
	DowntimeSeconds        float64 `json:"downtime_s"`
	InjectedToReadySeconds float64 `json:"injected_to_ready_s"`
	// Requests hit: their lifetime overlaps the fault's window; MaxPauseMs the longest
	// inter-token gap any client saw that overlaps the window.
	RequestsHit int     `json:"requests_hit"`
	MaxPauseMs  float64 `json:"max_pause_ms"`
}

// ServeSummary is what `schooner demo serve` prints and writes (--json prints it as is).
type ServeSummary struct {
	Deployment  string  `json:"deployment"`
	Model       string  `json:"model"`
	Stages      int     `json:"stages"`
	Policy      string  `json:"policy,omitempty"`
	Rate        float64 `json:"rate_per_s"`
	DurationS   float64 `json:"duration_s"`
	WallSeconds float64 `json:"wall_s"`
	TimeScale   float64 `json:"time_scale"`
	Requests    int     `json:"requests"`
	Succeeded   int     `json:"succeeded"`
	Failed      int     `json:"failed"`
	// Matched have exactly the reference's text; Differing succeeded with other text.
	Matched         int   `json:"matched"`
	Differing       int   `json:"differing"`
	DifferingIDs    []int `json:"differing_requests,omitempty"`
	FailedIDs       []int `json:"failed_requests,omitempty"`
	ReferenceErrors int   `json:"reference_errors"`
	Tokens          int   `json:"tokens"`
	// Latency is end to end; TTFT the time to the first text chunk; Gap the inter-token
	// gaps of requests no fault hit (the baseline beside each fault's pause).
	Latency       Percentiles    `json:"latency"`
	TTFT          Percentiles    `json:"ttft"`
	UnhitGap      Percentiles    `json:"unhit_inter_token_gap"`
	Faults        []FaultSummary `json:"faults"`
	PlannedFaults int            `json:"planned_faults"`
	RequestsHit   int            `json:"requests_hit"`
	// Router counters over the whole run (reference included).
	Pauses     uint64 `json:"pauses"`
	Resumes    uint64 `json:"resumes"`
	Reprefills uint64 `json:"reprefills"`
	GapTokens  uint64 `json:"gap_tokens"`
	// Deployment: failovers, preemptions, notices, cost (simulated hours) against on-demand.
	Failovers       int     `json:"failovers"`
	Preemptions     int     `json:"preemptions"`
	Notices         int     `json:"notices"`
	SpotReturns     int     `json:"spot_returns,omitempty"`
	CostUSD         float64 `json:"cost_usd"`
	OnDemandCostUSD float64 `json:"on_demand_cost_usd"`
	SavingsPct      float64 `json:"savings_pct"`
	FinalPhase      string  `json:"final_phase"`
	LeakedInstances int     `json:"leaked_instances"`
	// OK: every request succeeded with its reference's text, every fault was recorded as a
	// failover, the deployment stopped and nothing leaked.
	OK       bool     `json:"ok"`
	Problems []string `json:"problems,omitempty"`
}

// Percentile is the nearest-rank p-th percentile (0 < p ≤ 100) of xs; 0 for none. xs is
// not modified.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

func percentiles(xs []float64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	return Percentiles{P50: round(Percentile(xs, 50), 1), P99: round(Percentile(xs, 99), 1), Max: round(Percentile(xs, 100), 1)}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// overlaps says whether [a0, a1] and [b0, b1] share an instant.
func overlaps(a0, a1, b0, b1 time.Time) bool { return !a1.Before(b0) && !b1.Before(a0) }

// loadEnd is the last end of a request (or the load start).
func loadEnd(f ServeFacts) time.Time {
	end := f.LoadStart
	for _, r := range f.Requests {
		if r.End.After(end) {
			end = r.End
		}
	}
	return end
}

// PolicyName is the serving policy the run used: Policy, or spot-aware for summaries
// written before demo serve had --policy (they all ran it).
func (s ServeSummary) PolicyName() string {
	if s.Policy == "" {
		return policy.ServeSpotAware
	}
	return s.Policy
}

// SummarizeServing computes the summary from the facts.
func SummarizeServing(f ServeFacts) ServeSummary {
	slack := f.Slack
	defaults.Positive(&slack, FaultSlack)
	s := ServeSummary{Deployment: f.Deployment, Model: f.Model, Stages: f.Stages, Policy: f.Policy, Rate: f.Rate,
		DurationS: f.Duration.Seconds(), WallSeconds: round(f.Wall.Seconds(), 1), TimeScale: f.TimeScale,
		Requests: len(f.Requests), PlannedFaults: f.PlannedFaults, ReferenceErrors: f.ReferenceErrors,
		Pauses: f.Counters.Pauses, Resumes: f.Counters.Resumes, Reprefills: f.Counters.Reprefills, GapTokens: f.Counters.GapTokens,
		Failovers: f.Final.Failovers, Preemptions: f.Final.Preemptions, Notices: f.Final.Notices, SpotReturns: f.Final.SpotReturns,
		CostUSD: round(f.Final.CostUSD, 4), OnDemandCostUSD: round(f.Final.OnDemandCostUSD, 4),
		FinalPhase: f.Final.Phase, LeakedInstances: f.LeakedInstances}
	if f.Final.OnDemandCostUSD > 0 {
		s.SavingsPct = round(100*(1-f.Final.CostUSD/f.Final.OnDemandCostUSD), 1)
	}
	end := loadEnd(f)
	hit := make([]bool, len(f.Requests))
	for _, ft := range f.Faults {
		w0, w1 := ft.Window(slack, end)
		fs := FaultSummary{Stage: ft.Stage, Notice: ft.Notice, From: ft.Instance, Injected: ft.Injected,
			AtSeconds: round(ft.Injected.Sub(f.LoadStart).Seconds(), 2), InFlight: ft.InFlight}
		if fo := ft.Failover; fo != nil {
			fs.Recorded, fs.To = true, fo.To
			fs.FailoverSeconds, fs.DowntimeSeconds = round(fo.Seconds, 2), round(fo.DowntimeSeconds, 2)
			if !fo.ReadyAt.IsZero() {
				fs.InjectedToReadySeconds = round(fo.ReadyAt.Sub(ft.Injected).Seconds(), 2)
			}
		}
		var pause time.Duration
		for i, r := range f.Requests {
			if r.Start.IsZero() || !overlaps(r.Start, r.End, w0, w1) {
				continue
			}
			hit[i] = true
			fs.RequestsHit++
			// Gaps overlapping the window, counting the wait for the first chunk too.
			prev := r.Start
			for _, c := range r.Chunks {
				if overlaps(prev, c, w0, w1) {
					pause = max(pause, c.Sub(prev))
				}
				prev = c
			}
		}
		fs.MaxPauseMs = round(ms(pause), 1)
		s.Faults = append(s.Faults, fs)
	}
	var lat, ttft, gaps []float64
	for i, r := range f.Requests {
		if hit[i] {
			s.RequestsHit++
		}
		switch {
		case r.Error != "":
			s.Failed++
			s.FailedIDs = append(s.FailedIDs, r.Index)
			continue
		case r.Text == r.Reference:
			s.Matched++
		default:
			s.Differing++
			s.DifferingIDs = append(s.DifferingIDs, r.Index)
		}
		s.Succeeded++
		s.Tokens += len(r.Chunks)
		lat = append(lat, ms(r.End.Sub(r.Start)))
		if !r.FirstToken.IsZero() {
			ttft = append(ttft, ms(r.FirstToken.Sub(r.Start)))
		}
		if !hit[i] {
			for j := 1; j < len(r.Chunks); j++ {
				gaps = append(gaps, ms(r.Chunks[j].Sub(r.Chunks[j-1])))
			}
		}
	}
	s.Latency, s.TTFT, s.UnhitGap = percentiles(lat), percentiles(ttft), percentiles(gaps)
	s.Problems = serveProblems(s)
	s.OK = len(s.Problems) == 0
	return s
}

func serveProblems(s ServeSummary) []string {
	var p []string
	add := func(cond bool, format string, args ...any) {
		if cond {
			p = append(p, fmt.Sprintf(format, args...))
		}
	}
	add(s.Requests == 0, "no requests were sent")
	add(s.ReferenceErrors > 0, "%d reference requests failed", s.ReferenceErrors)
	add(s.Failed > 0, "%d requests failed: %v", s.Failed, s.FailedIDs)
	add(s.Differing > 0, "%d responses differ from their reference: %v", s.Differing, s.DifferingIDs)
	add(len(s.Faults) < s.PlannedFaults, "%d of %d planned faults were injected", len(s.Faults), s.PlannedFaults)
	for i, f := range s.Faults {
		add(!f.Recorded, "fault %d (stage %d, %s) has no failover record", i+1, f.Stage, NoticeWord(f.Notice))
	}
	add(s.FinalPhase != serving.PhaseStopped, "the deployment ended %q, not stopped", s.FinalPhase)
	add(s.LeakedInstances > 0, "%d instances leaked", s.LeakedInstances)
	return p
}

// NoticeWord is "with notice" or "without notice".
func NoticeWord(notice bool) string {
	if notice {
		return "with notice"
	}
	return "without notice"
}
