// Package trainingclient is the typed client of TrainingJob workflows: submit a job, read
// its status, watch it, wait for it, cancel it and list jobs. The CLI, the benchmarks and the
// integration tests all speak to jobs through it, so a job id, its start options and the
// meaning of "closed" are spelled out once. It uses the Temporal client, which is why it is
// not part of the Temporal-free contract in package training.
package trainingclient

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers/wfclient"
)

// DefaultRPCTimeout bounds one query or describe call when Client.RPCTimeout is zero.
const DefaultRPCTimeout = wfclient.DefaultRPCTimeout

// Client talks to TrainingJob workflows through a Temporal client it does not own.
type Client struct {
	// Temporal is the connection; closing it is the caller's business.
	Temporal client.Client
	// RPCTimeout bounds each status query and describe call (DefaultRPCTimeout when zero),
	// so a job whose workers are gone cannot hang a caller.
	RPCTimeout time.Duration
}

// New is a Client on c with the default timeouts.
func New(c client.Client) *Client { return &Client{Temporal: c} }

// SubmitOptions tune how a job is started; the zero value is what `schooner train submit`
// does on a real cloud.
type SubmitOptions struct {
	// ID is the job id, which is the workflow id (NewJobID(spec.Name) when empty).
	ID string
	// Options tune the job's control loop (JobOptions' defaults when zero).
	Options training.JobOptions
}

// Submit starts a TrainingJob on schooner-control and returns its job id. The workflow
// applies the defaults and validates the spec itself (and asks its provider for the time
// scale); callers that read a spec from a user validate it first only to answer sooner.
func (c *Client) Submit(ctx context.Context, spec training.Spec, o SubmitOptions) (string, error) {
	in := training.JobInput{Spec: spec, SubmittedAt: time.Now().UTC(), Options: o.Options}
	summary := fmt.Sprintf("train %s: %d iterations of %s", spec.Name, spec.Iterations, ModelName(spec.Model))
	return wfclient.Start(ctx, c.Temporal, "training job", cmp.Or(o.ID, NewJobID(spec.Name)), summary, training.WorkflowTrainingJob, in)
}

// NewJobID is train-<name>-<6 random lowercase letters and digits>.
func NewJobID(name string) string { return wfclient.NewID("train", name) }

// ModelName is how a job's model reads in summaries: its name, or its shape when it has none.
func ModelName(m training.Model) string {
	if m.Name != "" {
		return m.Name
	}
	return fmt.Sprintf("a %d-layer model (hidden %d)", m.Layers, m.Hidden)
}

// conn is the connection with its bound on each call, for wfclient.
func (c *Client) conn() wfclient.Conn {
	return wfclient.Conn{Temporal: c.Temporal, RPCTimeout: c.RPCTimeout}
}
