package servingclient

import (
	"context"
	"time"

	"github.com/schooner-ml/schooner/internal/pace"
	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/serving/router"
)

// ReplicaSetter is what Follow reconfigures: a serving/router.Pool.
type ReplicaSetter interface {
	SetReplicas([]router.ReplicaRoute)
}

// Follow keeps r pointed at the deployment's replicas: it polls the stages query every
// interval (a fifth of it while a replica is not ready or a stage moves, for at most five
// minutes of such a spell, so a replacement is routed to soon after it is ready) and calls
// SetReplicas when the pipeline's version moves, until ctx ends. A failed query (a busy
// control plane) keeps the router as it is; the next poll, at the usual interval, tries
// again. It returns the last pipeline it saw.
func (c *Client) Follow(ctx context.Context, id string, r ReplicaSetter, every time.Duration) serving.Pipeline {
	var last serving.Pipeline
	version := -1
	cadence := pace.New(every)
	wait := time.NewTimer(0)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			return last
		case <-wait.C:
		}
		settled := true
		if p, err := c.Pipeline(ctx, id); err == nil {
			last = p
			if p.Version != version {
				version = p.Version
				r.SetReplicas(RoutesOf(p))
			}
			settled = Settled(p)
		}
		wait.Reset(cadence.Next(settled, time.Now()))
	}
}

// Settled says whether every replica of p is ready and no stage is moving to a standby.
func Settled(p serving.Pipeline) bool {
	for _, rep := range p.Replicas {
		if !rep.Ready {
			return false
		}
		for _, s := range rep.Stages {
			if s.Moving {
				return false
			}
		}
	}
	return true
}

// RoutesOf is every replica of the pipeline with its ordered stage addresses once all of its
// stages are ready, and no stages while one is not (the router pauses that replica's requests
// until its replacement is ready; the other replicas go on). A prefill replica keeps its pool
// and the decode replica it feeds, so the router sends that replica's prompts to it.
func RoutesOf(p serving.Pipeline) []router.ReplicaRoute {
	out := make([]router.ReplicaRoute, 0, len(p.Replicas))
	for _, rep := range p.Replicas {
		rt := router.ReplicaRoute{Pool: rep.Pool, Feeds: rep.Feeds, Replica: rep.Replica}
		if rep.Ready {
			for _, s := range rep.Stages {
				rt.Stages = append(rt.Stages, router.StageAddr{Addr: s.Addr, Node: s.Node})
			}
		}
		out = append(out, rt)
	}
	return out
}
