package workflows

import (
	"sort"
	"time"

	"go.temporal.io/sdk/workflow"
)

// NodeRecord is what the registry knows about a node agent.
type NodeRecord struct {
	ID        string    `json:"id"`
	Hostname  string    `json:"hostname"`
	Queue     string    `json:"queue"`
	StartedAt time.Time `json:"started_at"`
	// LastRegistered is when the agent last (re)started and announced itself.
	LastRegistered time.Time `json:"last_registered"`
}

// NodeRegistryState is carried across continue-as-new.
type NodeRegistryState struct {
	Nodes []NodeRecord `json:"nodes"`
}

// maxRegistryEvents bounds the history of one run; the SDK's own suggestion usually comes
// much later, but a registry has no reason to keep a long history.
const maxRegistrySignals = 1000

// NodeRegistry is a long-lived workflow that knows every node agent: agents announce
// themselves with a signal when they start (SignalWithStart, so the first agent creates it)
// and withdraw on a clean shutdown. The "nodes" query answers from its state. Using a
// workflow instead of a database keeps schooner's only durable store Temporal itself.
func NodeRegistry(ctx workflow.Context, state NodeRegistryState) error {
	nodes := map[string]NodeRecord{}
	for _, n := range state.Nodes {
		nodes[n.ID] = n
	}
	snapshot := func() []NodeRecord {
		out := make([]NodeRecord, 0, len(nodes))
		for _, n := range nodes {
			out = append(out, n)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
		return out
	}
	if err := workflow.SetQueryHandler(ctx, QueryNodes, func() ([]NodeRecord, error) {
		return snapshot(), nil
	}); err != nil {
		return err
	}

	register := workflow.GetSignalChannel(ctx, SignalRegisterNode)
	deregister := workflow.GetSignalChannel(ctx, SignalDeregisterNode)
	handled := 0
	for {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(register, func(c workflow.ReceiveChannel, _ bool) {
			var rec NodeRecord
			c.Receive(ctx, &rec)
			if old, ok := nodes[rec.ID]; ok && !old.StartedAt.IsZero() && rec.StartedAt.IsZero() {
				rec.StartedAt = old.StartedAt
			}
			rec.LastRegistered = workflow.Now(ctx)
			if rec.StartedAt.IsZero() {
				rec.StartedAt = rec.LastRegistered
			}
			nodes[rec.ID] = rec
		})
		sel.AddReceive(deregister, func(c workflow.ReceiveChannel, _ bool) {
			var id string
			c.Receive(ctx, &id)
			delete(nodes, id)
		})
		sel.Select(ctx)
		handled++
		if handled >= maxRegistrySignals || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			// Drain what is already buffered so no announcement is lost across the boundary.
			for sel.HasPending() {
				sel.Select(ctx)
			}
			return workflow.NewContinueAsNewError(ctx, NodeRegistry, NodeRegistryState{Nodes: snapshot()})
		}
	}
}
