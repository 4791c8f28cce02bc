package workers

import (
	"context"
	"errors"
	"fmt"
	"github.com/schooner-ml/schooner/workflows/nodeswf"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/nodes"
	"github.com/schooner-ml/schooner/taskqueue"
)

// KnownNodes returns every registered node agent, in id order. No registry yet means no
// node has ever started: an empty list, not an error.
func KnownNodes(ctx context.Context, c client.Client) ([]nodes.Record, error) {
	resp, err := c.QueryWorkflow(ctx, nodes.RegistryID, "", nodes.QueryNodes)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return []nodes.Record{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("querying node registry: %w", err)
	}
	var nodes []nodes.Record
	if err := resp.Get(&nodes); err != nil {
		return nil, fmt.Errorf("decoding node registry: %w", err)
	}
	return nodes, nil
}

// KnownNodeIDs is KnownNodes reduced to ids, the shape the ListNodes activity returns.
func KnownNodeIDs(c client.Client) func(context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		nodes, err := KnownNodes(ctx, c)
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(nodes))
		for i, n := range nodes {
			ids[i] = n.ID
		}
		return ids, nil
	}
}

// RegisterNode announces a node agent, starting the registry if this is the first agent.
func RegisterNode(ctx context.Context, c client.Client, rec nodes.Record) error {
	_, err := c.SignalWithStartWorkflow(ctx, nodes.RegistryID, nodes.SignalRegister, rec,
		client.StartWorkflowOptions{
			ID:                    nodes.RegistryID,
			TaskQueue:             taskqueue.Control,
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			StaticSummary:         "Registry of schooner node agents",
		},
		nodeswf.NodeRegistry, nodes.RegistryState{})
	if err != nil {
		return fmt.Errorf("registering node %s: %w", rec.ID, err)
	}
	return nil
}

// DeregisterNode withdraws a node agent on a clean shutdown. It uses its own short
// deadline because it runs while the process is stopping.
func DeregisterNode(c client.Client, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := c.SignalWorkflow(ctx, nodes.RegistryID, "", nodes.SignalDeregister, id)
	if err != nil {
		return fmt.Errorf("deregistering node %s: %w", id, err)
	}
	return nil
}
