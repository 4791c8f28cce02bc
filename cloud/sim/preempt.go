package sim

import (
	"github.com/schooner-ml/schooner/cloud"
)

// scheduleCapacity queues the next change of o's capacity, if it has one.
func (m *Market) scheduleCapacity(o *offering) {
	at, level, ok := o.capacity.next()
	if !ok {
		return
	}
	m.queue.schedule(&item{at: m.cfg.Start.Add(at), act: actCapacity, off: o, level: level})
}

// setCapacity applies a new spot capacity and, when it no longer covers what is held,
// announces preemptions.
func (m *Market) setCapacity(o *offering, level int) {
	o.level = level
	surplus := o.held() - level
	// Newest first: the instances that had the least time to do work lose the least, and it
	// is the order a capacity pool that filled up last-in gives back in.
	for i := len(o.spot) - 1; i >= 0 && surplus > 0; i-- {
		if inst := o.spot[i]; !inst.leaving {
			m.notice(inst)
			surplus--
		}
	}
}

// held is how many live spot instances of o are not under notice: the ones a fall in
// capacity may still take back (those under notice are already being taken).
func (o *offering) held() int {
	n := 0
	for _, inst := range o.spot {
		if !inst.leaving {
			n++
		}
	}
	return n
}

// free is how many more spot instances o can give now. An instance under notice still
// occupies its capacity until it is gone, so a capacity that comes back while it drains is
// not handed out twice: the offering never holds more than its trace allows.
func (o *offering) free() int { return max(0, o.level-len(o.spot)) }

// notice warns inst that it will be preempted after its provider's notice period.
func (m *Market) notice(inst *instance) {
	inst.leaving = true
	deadline := m.now.Add(inst.off.params.NoticePeriod)
	inst.Interruption = &cloud.Interruption{Kind: cloud.Notice, InstanceID: inst.ID, Zone: inst.Zone,
		Deadline: deadline, At: m.now}
	m.record(cloud.EventNotice, inst)
	m.queue.schedule(&item{at: deadline, act: actPreempt, inst: inst})
}

// preempt reclaims inst when its notice runs out, unless it was terminated meanwhile.
func (m *Market) preempt(inst *instance) {
	if inst.State.Gone() {
		return
	}
	m.stopBilling(inst)
	inst.State = cloud.StatePreempted
	m.writeUsage(inst)
	inst.Interruption = &cloud.Interruption{Kind: cloud.Preempted, InstanceID: inst.ID, Zone: inst.Zone,
		Deadline: m.now, At: m.now}
	m.release(inst)
	m.record(cloud.EventPreempted, inst)
}

// boot turns a pending instance into a running one; billing starts here.
func (m *Market) boot(inst *instance) {
	if inst.State != cloud.StatePending {
		return
	}
	inst.State = cloud.StateRunning
	m.startBilling(inst)
	m.record(cloud.EventRunning, inst)
}

// release frees what a gone instance held: its capacity slot and its quota.
func (m *Market) release(inst *instance) {
	o := inst.off
	if inst.Capacity == cloud.Spot {
		for i, s := range o.spot {
			if s == inst {
				o.spot = append(o.spot[:i:i], o.spot[i+1:]...)
				break
			}
		}
	} else {
		o.onDemand--
	}
	m.gpusHeld[o.Provider] -= inst.GPUs
}
