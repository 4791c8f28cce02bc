package colocation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/schooner-ml/schooner/interference"
)

// Workflow, activity and query names (docs/workflows.md): the Colocation workflow runs on the
// control queue, decides placement from the interference results, and asks the node, on its
// own queue, to RunColocated; "status" answers where it stands.
const (
	WorkflowColocation   = "Colocation"
	ActivityRunColocated = "RunColocated"
	QueryStatus          = "status"
)

// Input is the workflow's input: the node, the pair, and the evidence placement decides on.
type Input struct {
	Node string `json:"node"`
	Pair Pair   `json:"pair"`
	// Study is the interference study of the node's GPU, and Kinds the study's workloads the
	// two programs resemble (e.g. decode-chain + train-step): the pair is placed only when a
	// mechanism of the study kept that kind of HP side within the target. Force places
	// without evidence (the runtime still throttles and evicts).
	Study *interference.Study `json:"study,omitempty"`
	Kinds interference.Pair   `json:"kinds,omitempty"`
	Force bool                `json:"force,omitempty"`
	// Wait is how long the node agent may take to pick the pair up (default 30 s).
	Wait time.Duration `json:"wait,omitempty"`
}

// WithDefaults fills the pair's defaults and the wait.
func (in Input) WithDefaults() Input {
	in.Pair = in.Pair.WithDefaults()
	if in.Wait == 0 {
		in.Wait = 30 * time.Second
	}
	return in
}

// Validate names what is wrong.
func (in Input) Validate() error {
	var errs []error
	if in.Node == "" {
		errs = append(errs, errors.New("node: empty (the node agent whose GPU the pair shares)"))
	}
	if err := in.Pair.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("pair: %w", err))
	}
	if in.Wait < 0 {
		errs = append(errs, fmt.Errorf("wait: %s is negative", in.Wait))
	}
	switch {
	case in.Study == nil && !in.Force:
		errs = append(errs, errors.New("study: no interference results to place on (give the node's study, or force)"))
	case in.Study != nil:
		if err := in.Study.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("study: %w", err))
		}
		if err := in.Kinds.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("kinds: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Phase is where a colocation stands.
type Phase string

// The phases: refused (placement said no), running on the node, done (the HP program ended),
// failed.
const (
	Placing Phase = "placing"
	Refused Phase = "refused"
	OnNode  Phase = "running"
	Done    Phase = "completed"
	Failed  Phase = "failed"
)

// WorkflowStatus is what the status query answers. The live counters of a running pair are
// the activity's heartbeat details (Status), shown by `schooner colocate status` and the UI.
type WorkflowStatus struct {
	Phase     Phase     `json:"phase"`
	Node      string    `json:"node"`
	Placement string    `json:"placement,omitempty"` // why the pair was placed or refused
	Started   time.Time `json:"started,omitempty"`
	Result    *Result   `json:"result,omitempty"`
	Error     string    `json:"error,omitempty"`
}

// NodeActivities run on a node agent.
type NodeActivities interface {
	// RunColocated runs the pair on the node's GPU to the HP program's end, heartbeating its
	// Status every window.
	RunColocated(ctx context.Context, pair Pair) (Result, error)
}
