package sim

import (
	"fmt"
	"time"

	"github.com/schooner-ml/schooner/cloud"
)

// Fault injection, for SIMULATION ONLY: the demo and the tests use these to put preemptions
// and capacity shortages on a schedule, on top of what the traces and capacity models do by
// themselves. Real clouds have no such calls. Each injection takes effect at the market's
// current simulated time, under the market's lock, through the same bookkeeping as the
// market's own events (so the event log, billing and capacity stay consistent); what makes a
// run with injections differ from another is only when the caller injects.

// Preempt announces a preemption of instance id now and carries it out after notice of
// simulated time; notice 0 preempts at once, with no notice at all (a machine that simply
// disappears). An instance already under notice keeps the earlier of the two deadlines. It
// fails with cloud.ErrNotFound for an unknown instance and cloud.ErrInvalidRequest for one
// already gone or a negative notice.
func (m *Market) Preempt(id string, notice time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	inst, ok := m.instances[id]
	switch {
	case !ok:
		return notFound("sim", "UnknownInstance", "no instance %s", id)
	case inst.State.Gone():
		return badRequest("sim", CodeInvalidParameter, "instance %s is already %s", id, inst.State)
	case notice < 0:
		return badRequest("sim", CodeInvalidParameter, "notice %s must not be negative", notice)
	case notice == 0:
		m.preempt(inst)
		return nil
	}
	deadline := m.now.Add(notice)
	if inst.Interruption != nil && inst.Interruption.Kind == cloud.Notice && !inst.Interruption.Deadline.After(deadline) {
		return nil // an earlier notice stands
	}
	inst.leaving = true
	inst.Interruption = &cloud.Interruption{Kind: cloud.Notice, InstanceID: inst.ID, Zone: inst.Zone, Deadline: deadline, At: m.now}
	m.record(cloud.EventNotice, inst)
	m.queue.schedule(&item{at: deadline, act: actPreempt, inst: inst})
	return nil
}

// PreemptWithNotice preempts instance id after its provider's own notice period (2 minutes on
// AWS, 30 seconds on GCP by default): the usual shape of a spot reclaim.
func (m *Market) PreemptWithNotice(id string) error {
	m.mu.Lock()
	inst, ok := m.instances[id]
	var period time.Duration
	if ok {
		period = inst.off.params.NoticePeriod
	}
	m.mu.Unlock()
	if !ok {
		return notFound("sim", "UnknownInstance", "no instance %s", id)
	}
	return m.Preempt(id, max(period, time.Nanosecond))
}

// SetCapacity sets the spot capacity of one offering now, as a trace step would: instances
// above the new level are noticed, newest first. The offering's capacity model keeps running,
// so its next scheduled change overrides the level.
func (m *Market) SetCapacity(key Key, level int) error {
	if level < 0 {
		return badRequest("sim", CodeInvalidParameter, "capacity %d of %s must not be negative", level, key)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.byKey[key]
	if !ok {
		return notFound("sim", CodeUnsupported, "no simulated offering %s", key)
	}
	m.setCapacity(o, level)
	return nil
}

// Drain takes every spot offering of zone down to what it already holds: new spot requests
// there fail with an insufficient-capacity error while running instances are left alone, the
// shortage that follows a wave of preemptions in a zone. Like SetCapacity, it lasts until
// each offering's capacity model next changes the level. It returns how many offerings it
// drained and fails with cloud.ErrNotFound for a zone the market does not simulate.
func (m *Market) Drain(zone string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.zones[zone]; !ok {
		return 0, notFound("sim", CodeUnknownZone, "zone %s is not simulated", zone)
	}
	n := 0
	for _, o := range m.offerings {
		if o.Zone == zone {
			o.level = o.held()
			n++
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("draining %s: %w", zone, notFound("sim", CodeUnknownZone, "zone %s has no offerings", zone))
	}
	return n, nil
}
