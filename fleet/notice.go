package fleet

import (
	"time"

	"github.com/schooner-ml/schooner/cloud"
)

// SignalPreemptionNotice is the signal a preemption notice travels by, to whatever workflow
// holds the instance (a training job, a serving deployment): the node agents and the
// control side's preemption relay send it without knowing which kind of workflow it is.
const SignalPreemptionNotice = "preemption-notice"

// PreemptionNotice tells a workflow an instance will be reclaimed at Deadline (Kind notice:
// the node agent read it from the instance's metadata) or is gone already (Kind preempted:
// the provider's event log said so). It lets the workflow plan ahead of the provider's own
// report; the workflow still confirms a loss with the provider before acting.
type PreemptionNotice struct {
	InstanceID string                 `json:"instance_id"`
	Kind       cloud.InterruptionKind `json:"kind"`
	Deadline   time.Time              `json:"deadline,omitempty"`
}
