package servingwf

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/serving"
)

// spotReturnVersion gates the move of stages off on-demand fallback machines back to spot
// (histories recorded before it never looked).
const spotReturnVersion = "return-to-spot"

// lookForSpot marks the stages that run on an on-demand fallback machine, every
// SpotReturnEvery (provider time), to move back to spot: the next turn places each on spot
// only and, where there is room, buys a standby there and migrates as after a notice (the
// KV cache restored, no request interrupted), then releases the on-demand machine. Without
// spot room the stage stays where it is until the next check. Only spot-with-fallback
// deployments fall back, so only they return; a stage mid-failover or mid-migration waits.
func (d *dep) lookForSpot(ctx workflow.Context, now time.Time) {
	if d.spec.Spot != fleet.SpotWithFallback || d.opts.SpotReturnEvery < 0 || now.Before(d.nextSpotCheck) {
		return
	}
	var back []*slot
	for _, s := range d.all() {
		if s.inst.ID != "" && capOf(s.inst) == cloud.OnDemand && s.state == serving.StateReady && s.standby == nil &&
			s.noticedAt.IsZero() && s.fo == nil && !s.toSpot {
			back = append(back, s)
		}
	}
	if len(back) == 0 {
		return
	}
	if workflow.GetVersion(ctx, spotReturnVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	d.nextSpotCheck = now.Add(d.scale.Wall(d.opts.SpotReturnEvery))
	for _, s := range back {
		s.toSpot = true
	}
	d.event(ctx, fmt.Sprintf("%d stages on on-demand fallback machines: looking for spot room", len(back)))
}
