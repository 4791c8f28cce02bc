package router

import (
	"time"
)

type reqState int

const (
	stateWaiting reqState = iota // in the queue
	stateRunning                 // submitted to the first stage
	statePaused                  // its pipeline broke; waiting for a replacement
	stateDone                    // finished, failed or cancelled
)

// request is one completion. Fields below mu are guarded by Router.mu.
type request struct {
	id          string
	prompt      []int
	maxTokens   int
	temperature float64
	seed        int64
	key         int64 // queue key: arrival in nanoseconds
	created     time.Time

	notify chan struct{} // capacity 1: something below changed

	state      reqState
	tokens     []int // delivered tokens; tokens[k] is step k
	reason     string
	err        *APIError
	pauseTimer *time.Timer
	pauseSeq   uint64
	resumeMode string // "": the worker chooses; resumeReprefill after a restore_failed
	// handoff: a prompt pool's request (token 0 only), whose KV cache replica the stages keep
	// when it ends, for the token pool; expect: a token pool's request, whose restore waits
	// for a prompt still on its way to the holder (disagg.go).
	handoff, expect bool
}

// Section 1's error code for a resubmission whose KV cache the stages could not restore, and
// the resume_mode the router answers it with.
const (
	codeRestoreFailed = "restore_failed"
	resumeReprefill   = "reprefill"
)

// inFlight reports whether q was submitted to a pipeline and has not ended: the stages may
// still hold it and send its tokens (also while it is paused for a replacement).
func (q *request) inFlight() bool { return q.state == stateRunning || q.state == statePaused }

func (q *request) wake() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// submitMsg is section 1's submit.
type submitMsg struct {
	Op          string  `json:"op"`
	Request     string  `json:"request"`
	Prompt      []int   `json:"prompt"`
	MaxTokens   int     `json:"max_tokens"`
	Temperature float64 `json:"temperature"`
	Seed        int64   `json:"seed"`
	ResumeFrom  int     `json:"resume_from,omitempty"`
	Generated   []int   `json:"generated,omitempty"`
	ResumeMode  string  `json:"resume_mode,omitempty"`
	// Route is the worker addresses of the pipeline the router serves the request on, stage 0
	// first: every step of it goes along this route, so a step never leaves one pipeline and
	// comes back to another while the stages' own successors are being updated.
	Route []string `json:"route,omitempty"`
	// Handoff and Expect carry the request's part in a disaggregated deployment (disagg.go).
	Handoff bool `json:"handoff,omitempty"`
	Expect  bool `json:"expect,omitempty"`
}

// submitLocked builds the submit of q as of now, along route: a resubmission carries what was
// delivered.
func (q *request) submitLocked(route []string) submitMsg {
	m := submitMsg{Op: "submit", Request: q.id, Prompt: q.prompt, MaxTokens: q.maxTokens,
		Temperature: q.temperature, Seed: q.seed, Route: route, Handoff: q.handoff}
	if n := len(q.tokens); n > 0 {
		m.ResumeFrom = n
		m.Generated = append([]int(nil), q.tokens...)
		m.ResumeMode = q.resumeMode
		m.Expect = q.expect
	}
	return m
}
