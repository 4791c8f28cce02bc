package main

import (
	"context"
	"fmt"
	"time"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/catalog"
	"github.com/schooner-ml/schooner/cloud/gcp"
	"github.com/schooner-ml/schooner/cloud/sim/gceapi"
)

const (
	gceZone    = "us-central1-a"
	gceProject = "bench"
)

// gcePath is GCE's path: a Compute face over a Fake, the real Compute client, and the
// PreemptionFeed polling zone operations at the relay's pace.
type gcePath struct {
	fake *cloud.Fake
	p    *gcp.Provider
	feed *gcp.PreemptionFeed
	typ  string
}

func startGCE(ctx context.Context) (*gcePath, error) {
	var offers []cloud.Offering
	for _, o := range catalog.Default().Offerings("gcp") {
		if o.Zone == gceZone && o.GPUsPerInstance == 1 {
			offers = append(offers, o)
		}
	}
	if len(offers) == 0 {
		return nil, fmt.Errorf("the catalog has no 1-GPU GCP type in %s", gceZone)
	}
	fake := cloud.NewFake("gcp", offers...)
	face := gceapi.NewServer(fake, gceapi.Options{Project: gceProject})
	if err := face.Start("127.0.0.1:0"); err != nil {
		return nil, err
	}
	go func() { <-ctx.Done(); face.Close() }()
	p, err := gcp.New(ctx, gcp.Options{Project: gceProject, Zones: []string{gceZone}, Endpoint: face.URL(), PollInterval: time.Millisecond})
	if err != nil {
		return nil, err
	}
	feed := &gcp.PreemptionFeed{P: p, Interval: relayPoll}
	go feed.Run(ctx)
	return &gcePath{fake: fake, p: p, feed: feed, typ: offers[0].InstanceType}, nil
}

// preemptOne preempts a fresh VM and waits for the feed to have it.
func (g *gcePath) preemptOne(ctx context.Context, i int) (time.Duration, error) {
	insts, err := g.p.Create(ctx, cloud.CreateRequest{JobID: "bench", Zone: gceZone, InstanceType: g.typ, Capacity: cloud.Spot, Count: 1,
		ClientToken: fmt.Sprintf("gce-bench-%d", i)})
	if err != nil {
		return 0, err
	}
	time.Sleep(time.Duration(i%10) * relayPoll / 10)
	t0 := time.Now()
	if err := g.fake.Preempt(insts[0].ID); err != nil {
		return 0, err
	}
	for {
		for _, e := range g.feed.EventsSince(0) {
			if e.Instance.ID == insts[0].ID {
				return time.Since(t0), nil
			}
		}
		time.Sleep(100 * time.Microsecond)
	}
}
