package servingclient

import (
	"context"
	"time"

	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/serving/router"
)

// ReplicaSetter is what Follow reconfigures: a serving/router.Pool.
type ReplicaSetter interface {
	SetReplicas([]router.ReplicaRoute)
}

// Follow keeps r pointed at the deployment's replicas: it polls the stages query every
// interval and calls SetReplicas when the pipeline's version moves, until ctx ends. A failed
// query (a busy control plane) keeps the router as it is; the next poll tries again. It
// returns the last pipeline it saw.
func (c *Client) Follow(ctx context.Context, id string, r ReplicaSetter, every time.Duration) serving.Pipeline {
	var last serving.Pipeline
	version := -1
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if p, err := c.Pipeline(ctx, id); err == nil {
			last = p
			if p.Version != version {
				version = p.Version
				r.SetReplicas(RoutesOf(p))
			}
		}
		select {
		case <-ctx.Done():
			return last
		case <-tick.C:
		}
	}
}

// RoutesOf is every replica of the pipeline with its ordered stage addresses once all of its
// stages are ready, and no stages while one is not (the router pauses that replica's requests
// until its replacement is ready; the other replicas go on).
func RoutesOf(p serving.Pipeline) []router.ReplicaRoute {
	out := make([]router.ReplicaRoute, 0, len(p.Replicas))
	for _, rep := range p.Replicas {
		rt := router.ReplicaRoute{Replica: rep.Replica}
		if rep.Ready {
			for _, s := range rep.Stages {
				rt.Stages = append(rt.Stages, router.StageAddr{Addr: s.Addr, Node: s.Node})
			}
		}
		out = append(out, rt)
	}
	return out
}
