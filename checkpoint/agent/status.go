package agent

import (
	"context"
	"time"
)

// statusListTimeout bounds the store listing of a status request: status is for people and
// dashboards, and must answer even when the store is slow.
const statusListTimeout = 5 * time.Second

// Status reports what the agent holds: each rank's newest committed step and saves in flight,
// the durable steps in the store, the upload backlog and the preemption notice.
func (a *Agent) Status(ctx context.Context) Status {
	s := Status{Mode: a.opts.Mode, Ranks: []RankStatus{}, Notice: a.currentNotice()}
	for _, r := range a.allRanks() {
		s.Ranks = append(s.Ranks, r.status())
	}
	a.mu.Lock()
	s.Decision = a.decision
	a.mu.Unlock()
	if a.up != nil {
		s.UploadBacklog = a.up.Pending()
		s.UploadBandwidth = a.up.Bandwidth()
	}
	if a.remote != nil {
		ctx, cancel := context.WithTimeout(ctx, statusListTimeout)
		defer cancel()
		steps, err := a.remote.DurableSteps(ctx)
		if err != nil {
			s.RemoteError = err.Error()
		}
		s.RemoteDurable = steps
	}
	return s
}

func (c *conn) status() (Response, error) {
	s := c.a.Status(c.ctx)
	now, deadline := c.a.checkpointNow(c.rank)
	return Response{Status: &s, CheckpointNow: now, Deadline: deadline}, nil
}

// poll is the cheap question a trainer asks every step: should it checkpoint now?
func (c *conn) poll() (Response, error) {
	now, deadline := c.a.checkpointNow(c.rank)
	return Response{CheckpointNow: now, Deadline: deadline}, nil
}
