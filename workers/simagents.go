package workers

import (
	"context"

	"go.temporal.io/sdk/client"
)

// SimAgents is what runs beside a simulated market so training jobs run on it: a node agent
// per running instance (SimNodes) and, on the control side, the PreemptionRelay that tells a
// job when the provider preempts one of its machines.
type SimAgents struct {
	Nodes *SimNodes
	Relay *PreemptionRelay
}

// StartSimAgents starts both on c, following o.Market; they run until Stop (ctx's values are
// kept, its cancellation is not, so the caller's Stop decides when they end).
func StartSimAgents(ctx context.Context, c client.Client, o SimNodesOptions) (*SimAgents, error) {
	nodes, err := NewSimNodes(c, o)
	if err != nil {
		return nil, err
	}
	relay := &PreemptionRelay{Source: o.Market, Reporter: nodes.o.Reporter, After: o.Market.LastSeq(),
		PollInterval: nodes.o.PollInterval, Logger: o.Logger.With().Str("component", "preemption-relay").Logger()}
	ctx = context.WithoutCancel(ctx)
	nodes.Start(ctx)
	relay.Start(ctx)
	return &SimAgents{Nodes: nodes, Relay: relay}, nil
}

// Stop stops the relay, then the node agents.
func (a *SimAgents) Stop() {
	a.Relay.Stop()
	a.Nodes.Stop()
}
