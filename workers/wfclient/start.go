package wfclient

import (
	"context"
	"crypto/rand"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/taskqueue"
)

// NewID is <prefix>-<name>-<6 random lowercase letters and digits>: a workflow id that
// people can read and that two starts of one spec do not share.
func NewID(prefix, name string) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return prefix + "-" + name + "-" + string(b)
}

// Start starts a workflow of workflowType with input in on schooner-control under id, with
// summary as its static summary in the UI, and returns id; what is the kind of workflow, for
// the error.
func Start(ctx context.Context, c client.Client, what, id, summary, workflowType string, in any) (string, error) {
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: taskqueue.Control, StaticSummary: summary}, workflowType, in)
	if err != nil {
		return "", fmt.Errorf("starting %s %s: %w", what, id, err)
	}
	return id, nil
}
