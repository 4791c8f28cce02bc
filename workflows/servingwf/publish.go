package servingwf

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/workflows/internal/jobwf"
)

// publish updates the story in the UI, and the search attributes (jobwf.Publisher) and the
// status memo when something visible changed (phase, GPUs, zones, membership, failovers):
// cost alone moves with every event and goes along with the next upsert, so the history
// does not grow with every poll.
func (d *dep) publish(ctx workflow.Context) {
	d.pub.Publish(ctx, d.story(), jobwf.Visible{Phase: d.status.Phase, CostUSD: d.status.CostUSD, GPUs: d.status.GPUs,
		Zones: d.status.Zones, More: fmt.Sprintf("%d|%d", d.version, d.status.Failovers)},
		func() map[string]any { return map[string]any{serving.MemoStatus: d.snapshot().Published()} })
}

// story is the workflow's current details in the UI.
func (d *dep) story() string {
	var b strings.Builder
	ready := 0
	for _, s := range d.all() {
		if s.state == serving.StateReady {
			ready++
		}
	}
	fmt.Fprintf(&b, "**%s** (%s) — %s, %d/%d stages ready (%d replicas × %d stages)", d.spec.Name, d.spec.ModelID(),
		d.status.Phase, ready, len(d.all()), d.replicas(), d.depth())
	if n := d.prefillReplicas(); n > 0 {
		fmt.Fprintf(&b, ", and %d prefill replicas streaming prompts to them", n)
	}
	fmt.Fprintf(&b, "\n\n%d GPUs in %s, $%.2f/h, $%.2f so far (on demand: $%.2f)", d.status.GPUs,
		strings.Join(d.status.Zones, ", "), d.status.USDPerHour, d.status.CostUSD, d.status.OnDemandCostUSD)
	fmt.Fprintf(&b, "\n\n%d failovers, %d preemptions, %d notices", d.status.Failovers, d.status.Preemptions, d.status.Notices)
	if n := len(d.status.FailoverRecords); n > 0 {
		f := d.status.FailoverRecords[n-1]
		fmt.Fprintf(&b, "\n\nlast failover: replica %d stage %d, %s → %s in %.1f s (notice: %t)", f.Replica, f.Stage, f.From, f.To, f.Seconds, f.Notice)
	}
	if d.status.Error != "" {
		fmt.Fprintf(&b, "\n\nerror: %s", d.status.Error)
	}
	return b.String()
}
