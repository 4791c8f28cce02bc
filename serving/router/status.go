package router

import "time"

// ConnState is the state of the router's connection to a stage.
type ConnState string

// Connection states.
const (
	ConnConnecting ConnState = "connecting"
	ConnConnected  ConnState = "connected"
	ConnDown       ConnState = "down"   // the last attempt failed or the connection broke
	ConnUnused     ConnState = "unused" // a middle stage: the router does not talk to it
)

// Load is what a stage last reported in a pong.
type Load struct {
	Running      int `json:"running"`
	Waiting      int `json:"waiting"`
	KVBlocksFree int `json:"kv_blocks_free"`
}

type stageInfo struct {
	State     ConnState
	Since     time.Time
	LastError string
	Load      *Load
}

// StageStatus is the router's view of one stage.
type StageStatus struct {
	// Replica is the pipeline replica, as a Pool reports it (-1: a replica draining after it
	// left the deployment); a lone Router reports 0.
	Replica int `json:"replica"`
	// Pool is PoolPrefill for a prefill replica's stage (a Pool's), else empty.
	Pool      string    `json:"pool,omitempty"`
	Stage     int       `json:"stage"`
	Addr      string    `json:"addr"`
	Node      string    `json:"node,omitempty"`
	Role      string    `json:"role,omitempty"` // "first", "last", "first+last", or "" for a middle stage
	State     ConnState `json:"state"`
	Since     time.Time `json:"since"`
	LastError string    `json:"last_error,omitempty"`
	Load      *Load     `json:"load,omitempty"`
}

// Counters are totals since the router started.
type Counters struct {
	Completed     uint64 `json:"completed"`
	Failed        uint64 `json:"failed"`
	Cancelled     uint64 `json:"cancelled"`
	Pauses        uint64 `json:"pauses"`         // requests paused by a lost or changed stage
	Resumes       uint64 `json:"resumes"`        // resubmissions after a pause
	DroppedTokens uint64 `json:"dropped_tokens"` // replayed tokens (step < delivered) dropped
	GapTokens     uint64 `json:"gap_tokens"`     // tokens past the next expected step dropped
	Reprefills    uint64 `json:"reprefills"`     // resubmissions with resume_mode reprefill after restore_failed
}

// Status is a snapshot for the ServingDeployment workflow's status.
type Status struct {
	Model    string        `json:"model"`
	Ready    bool          `json:"ready"` // connected to the first and last stages
	Waiting  int           `json:"waiting"`
	Running  int           `json:"running"`
	Paused   int           `json:"paused"`
	Stages   []StageStatus `json:"stages"`
	Counters Counters      `json:"counters"`
	// Prefill are a Pool's prefill replicas' totals (nil without any): Completed counts the
	// prompts they computed for the decode replicas, whose Counters count each completion once.
	Prefill *Counters `json:"prefill,omitempty"`
}

// Status reports requests by state and the connection of every stage.
func (r *Router) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Status{Model: r.opts.Model, Ready: r.readyLocked(), Waiting: r.waiting, Running: r.running,
		Paused: r.paused, Counters: r.counters}
	for i, a := range r.stages {
		in := r.info[i]
		st := StageStatus{Stage: i, Addr: a.Addr, Node: a.Node, Role: roleOf(i, len(r.stages)), State: in.State,
			Since: in.Since, LastError: in.LastError}
		if in.Load != nil {
			l := *in.Load
			st.Load = &l
		}
		if st.Role == "" {
			st.State = ConnUnused
		}
		if st.State == "" {
			st.State = ConnConnecting
		}
		s.Stages = append(s.Stages, st)
	}
	return s
}
