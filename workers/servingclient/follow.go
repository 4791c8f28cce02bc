package servingclient

import (
	"context"
	"time"

	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/serving/router"
)

// StageSetter is what Follow reconfigures: a serving/router.Router.
type StageSetter interface {
	SetStages([]router.StageAddr)
}

// Follow keeps r pointed at the deployment's first ready replica: it polls the stages query
// every interval and calls SetStages when the pipeline's version moves, until ctx ends. A
// failed query (a busy control plane) keeps the router as it is; the next poll tries again.
// It returns the last pipeline it saw.
func (c *Client) Follow(ctx context.Context, id string, r StageSetter, every time.Duration) serving.Pipeline {
	var last serving.Pipeline
	version := -1
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if p, err := c.Pipeline(ctx, id); err == nil {
			last = p
			if p.Version != version {
				version = p.Version
				r.SetStages(RouteOf(p))
			}
		}
		select {
		case <-ctx.Done():
			return last
		case <-tick.C:
		}
	}
}

// RouteOf is the ordered stage addresses of the first replica whose every stage is ready,
// or nil while none is (the router pauses requests until one is).
func RouteOf(p serving.Pipeline) []router.StageAddr {
	for _, rep := range p.Replicas {
		if !rep.Ready {
			continue
		}
		out := make([]router.StageAddr, len(rep.Stages))
		for i, s := range rep.Stages {
			out[i] = router.StageAddr{Addr: s.Addr, Node: s.Node}
		}
		return out
	}
	return nil
}
