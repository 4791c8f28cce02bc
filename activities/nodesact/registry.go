package nodesact

import (
	"context"
)

// Registry holds control-plane activities that read the node registry. The lookup itself is
// injected (workers.KnownNodes in production) so this package stays free of workflow code.
type Registry struct {
	Known func(ctx context.Context) ([]string, error)
}

// ListNodes returns the ids of every registered node agent, in id order.
func (r *Registry) ListNodes(ctx context.Context) ([]string, error) {
	return r.Known(ctx)
}
