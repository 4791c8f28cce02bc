//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/schooner-ml/schooner/report"
	"github.com/schooner-ml/schooner/serving"
)

// faultPlan is one fault of `schooner demo serve`: the machine of a stage (replica 0) is
// preempted, with the provider's notice or without, once At of the load's duration has
// passed, the deployment serves with every stage ready and a request is mid-generation.
type faultPlan struct {
	At     float64
	Stage  int
	Notice bool
}

// defaultServeFaults is the documented schedule (see the command's help): the last stage
// dies without notice at 25%, the first stage gets a notice at 60%.
func defaultServeFaults(stages int) []faultPlan {
	return []faultPlan{{At: 0.25, Stage: max(stages-1, 0), Notice: false}, {At: 0.60, Stage: 0, Notice: true}}
}

// injectFaults runs plan against the deployment while the load runs (until ctx ends) and
// returns the faults it injected.
func (d *serveDemo) injectFaults(ctx context.Context, plan []faultPlan, start time.Time, dur time.Duration, st *loadState, sched []loadRequest) []report.ServeFault {
	var out []report.ServeFault
	for i, p := range plan {
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(start.Add(time.Duration(p.At * float64(dur))))):
		}
		f, ok := d.injectWhenReady(ctx, p, st, sched)
		if !ok {
			fmt.Fprintf(d.out, "  !! fault %d (stage %d %s) was not injected: the load ended first\n", i+1, p.Stage, report.NoticeWord(p.Notice))
			continue
		}
		out = append(out, f)
		fmt.Fprintf(d.out, "  >> %5.1f s  fault %d: preempted %s (stage %d) %s, %d requests mid-generation\n",
			f.Injected.Sub(start).Seconds(), i+1, f.Instance, f.Stage, map[bool]string{true: "WITH a notice", false: "WITHOUT notice"}[p.Notice], f.InFlight)
	}
	return out
}

// injectWhenReady waits for the deployment to serve with the stage ready and for a request
// mid-generation, then preempts the stage's machine.
func (d *serveDemo) injectWhenReady(ctx context.Context, p faultPlan, st *loadState, sched []loadRequest) (report.ServeFault, bool) {
	for {
		if ctx.Err() != nil {
			return report.ServeFault{}, false
		}
		if n := st.midGeneration(sched); n > 0 {
			if id := d.readyInstance(ctx, p.Stage); id != "" {
				injected := time.Now()
				if err := preemptInstance(d.stack.Market, id, p.Notice); err != nil {
					d.log.Warn().Err(err).Str("instance", id).Msg("injecting preemption")
				} else {
					return report.ServeFault{Stage: p.Stage, Instance: id, Notice: p.Notice, Injected: injected, InFlight: n}, true
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// readyInstance is the machine of the stage of replica 0 while the deployment serves with
// every stage ready, or "".
func (d *serveDemo) readyInstance(ctx context.Context, stage int) string {
	st, err := d.sc.Status(ctx, d.id)
	if err != nil || st.Phase != serving.PhaseServing {
		return ""
	}
	id := ""
	for _, s := range st.Stages {
		if s.Replica != 0 {
			continue
		}
		if s.State != serving.StateReady || s.Standby != "" || !s.NoticedAt.IsZero() {
			return "" // not settled: a noticed machine is about to be released
		}
		if s.Stage == stage {
			id = s.InstanceID
		}
	}
	return id
}

// awaitFailovers waits (up to limit) until the deployment serves again and has recorded a
// failover from every faulted machine, and attaches the records to the faults.
func (d *serveDemo) awaitFailovers(ctx context.Context, faults []report.ServeFault, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for {
		st, err := d.sc.Status(ctx, d.id)
		missing := 0
		if err == nil {
			for i := range faults {
				faults[i].Failover = nil
				for _, fo := range st.FailoverRecords {
					if fo.From == faults[i].Instance && !fo.ReadyAt.IsZero() {
						rec := fo
						faults[i].Failover = &rec
						break
					}
				}
				if faults[i].Failover == nil {
					missing++
				}
			}
			if missing == 0 && st.Phase == serving.PhaseServing {
				return
			}
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(d.out, "  !! %d faults have no failover record after %s (phase %s)\n", missing, limit, st.Phase)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}
