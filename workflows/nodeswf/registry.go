package nodeswf

import (
	"sort"

	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/nodes"
)

// maxRegistryEvents bounds the history of one run; the SDK's own suggestion usually comes
// much later, but a registry has no reason to keep a long history.
const maxRegistrySignals = 1000

// NodeRegistry is a long-lived workflow that knows every node agent: agents announce
// themselves with a signal when they start (SignalWithStart, so the first agent creates it)
// and withdraw on a clean shutdown. The "nodes" query answers from its state. Using a
// workflow instead of a database keeps schooner's only durable store Temporal itself.
func NodeRegistry(ctx workflow.Context, state nodes.RegistryState) error {
	known := map[string]nodes.Record{}
	for _, n := range state.Nodes {
		known[n.ID] = n
	}
	snapshot := func() []nodes.Record {
		out := make([]nodes.Record, 0, len(known))
		//workflowcheck:ignore the result is sorted right below
		for _, n := range known {
			out = append(out, n)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
		return out
	}
	if err := workflow.SetQueryHandler(ctx, nodes.QueryNodes, func() ([]nodes.Record, error) {
		return snapshot(), nil
	}); err != nil {
		return err
	}

	register := workflow.GetSignalChannel(ctx, nodes.SignalRegister)
	deregister := workflow.GetSignalChannel(ctx, nodes.SignalDeregister)
	handled := 0
	for {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(register, func(c workflow.ReceiveChannel, _ bool) {
			var rec nodes.Record
			c.Receive(ctx, &rec)
			if old, ok := known[rec.ID]; ok && !old.StartedAt.IsZero() && rec.StartedAt.IsZero() {
				rec.StartedAt = old.StartedAt
			}
			rec.LastRegistered = workflow.Now(ctx)
			if rec.StartedAt.IsZero() {
				rec.StartedAt = rec.LastRegistered
			}
			known[rec.ID] = rec
		})
		sel.AddReceive(deregister, func(c workflow.ReceiveChannel, _ bool) {
			var id string
			c.Receive(ctx, &id)
			delete(known, id)
		})
		sel.Select(ctx)
		handled++
		if handled >= maxRegistrySignals || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			// Drain what is already buffered so no announcement is lost across the boundary.
			for sel.HasPending() {
				sel.Select(ctx)
			}
			return workflow.NewContinueAsNewError(ctx, NodeRegistry, nodes.RegistryState{Nodes: snapshot()})
		}
	}
}
