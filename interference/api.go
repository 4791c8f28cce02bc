package interference

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Workflow and activity names (docs/workflows.md): InterferenceStudy runs on the control queue
// and asks each node, on the node's own queue, to ProfileInterference.
const (
	WorkflowStudy   = "InterferenceStudy"
	ActivityProfile = "ProfileInterference"
)

// StudyInput is the workflow's input: the nodes to profile (none: every registered node) and
// what to run on each. Wait is how long a node agent may take to pick the study up before it
// is reported unreachable (default 30 s).
type StudyInput struct {
	Nodes   []string      `json:"nodes,omitempty"`
	Request StudyRequest  `json:"request"`
	Wait    time.Duration `json:"wait,omitempty"`
}

// WithDefaults applies the request's defaults and the default wait.
func (in StudyInput) WithDefaults() StudyInput {
	in.Request = in.Request.WithDefaults()
	if in.Wait == 0 {
		in.Wait = 30 * time.Second
	}
	return in
}

// Validate names what is wrong, the request's fields under "request.".
func (in StudyInput) Validate() error {
	var errs []error
	seen := map[string]bool{}
	for i, n := range in.Nodes {
		switch {
		case n == "":
			errs = append(errs, fmt.Errorf("nodes[%d]: empty", i))
		case seen[n]:
			errs = append(errs, fmt.Errorf("nodes[%d]: %s twice", i, n))
		}
		seen[n] = true
	}
	if in.Wait < 0 {
		errs = append(errs, fmt.Errorf("wait: %s is negative", in.Wait))
	}
	if err := in.Request.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("request: %w", err))
	}
	return errors.Join(errs...)
}

// NodeStudy is one node's answer: its study, or why there is none (unreachable, no executor,
// a failed run).
type NodeStudy struct {
	NodeID string `json:"node"`
	Study  *Study `json:"study,omitempty"`
	Error  string `json:"error,omitempty"`
}

// StudyResult is the workflow's result, one entry per node in the order asked.
type StudyResult struct {
	Nodes []NodeStudy `json:"nodes"`
}

// NodeActivities run on a node agent.
type NodeActivities interface {
	// ProfileInterference runs the study on this node's GPU, heartbeating its progress.
	ProfileInterference(ctx context.Context, req StudyRequest) (Study, error)
}
