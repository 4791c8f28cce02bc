package cloud

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Fake is an in-memory Provider for tests: canned offerings, per-offering spot capacity,
// injectable errors per operation, recorded calls and helpers to announce and carry out
// preemptions. It is not a market simulation (that is cloud/sim); it does exactly what a test
// tells it. Safe for concurrent use.
type Fake struct {
	ProviderName string
	Now          func() time.Time

	mu sync.Mutex
	// OfferingList is returned by Offerings (filtered).
	OfferingList []Offering
	// Capacity limits how many instances Create may start per offering key; keys not present
	// are unlimited.
	Capacity map[OfferingKey]int
	// Errors are returned, first in first out, by the named operation ("Offerings", "Create",
	// "Describe", "Terminate", "List") before it does anything else.
	Errors    map[string][]error
	Calls     []string
	instances map[string]*Instance
	order     []string
	next      int
	events    []Event
}

var (
	_ Provider           = (*Fake)(nil)
	_ EventSource        = (*Fake)(nil)
	_ InterruptionSource = (*Fake)(nil)
)

// NewFake returns a Fake named name with the given offerings.
func NewFake(name string, offers ...Offering) *Fake {
	f := &Fake{ProviderName: name}
	f.Reset()
	f.OfferingList = offers
	return f
}

// Reset forgets instances, calls, capacity limits and injected errors; offerings stay.
func (f *Fake) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Capacity = map[OfferingKey]int{}
	f.Errors = map[string][]error{}
	f.Calls = nil
	f.instances = map[string]*Instance{}
	f.order = nil
	f.next = 0
	f.events = nil
}

// record appends an event; f.mu must be held.
func (f *Fake) record(kind EventKind, inst *Instance) {
	f.events = append(f.events, Event{Seq: int64(len(f.events) + 1), Time: f.now(), Kind: kind, Instance: *inst})
}

// EventsSince returns the events after seq.
func (f *Fake) EventsSince(seq int64) []Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	if seq < 0 {
		seq = 0
	}
	if seq >= int64(len(f.events)) {
		return []Event{}
	}
	return append([]Event(nil), f.events[seq:]...)
}

// InterruptionOf returns the interruption of instance id, or nil.
func (f *Fake) InterruptionOf(id string) *Interruption {
	f.mu.Lock()
	defer f.mu.Unlock()
	if inst, ok := f.instances[id]; ok && inst.Interruption != nil {
		cp := *inst.Interruption
		return &cp
	}
	return nil
}

// InjectError queues err for the next call of op.
func (f *Fake) InjectError(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Errors[op] = append(f.Errors[op], err)
}

func (f *Fake) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// enter records the call and pops an injected error; f.mu must be held.
func (f *Fake) enter(op string) error {
	f.Calls = append(f.Calls, op)
	if q := f.Errors[op]; len(q) > 0 {
		f.Errors[op] = q[1:]
		return q[0]
	}
	return nil
}

func (f *Fake) Name() string { return f.ProviderName }

func (f *Fake) Offerings(_ context.Context, filter OfferingFilter) ([]Offering, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("Offerings"); err != nil {
		return nil, err
	}
	return pick(f.OfferingList, func(o Offering) (Offering, bool) { return o, filter.Match(o) }), nil
}

func (f *Fake) findOffering(zone, typ string) (Offering, bool) {
	for _, o := range f.OfferingList {
		if o.Zone == zone && o.InstanceType == typ {
			return o, true
		}
	}
	return Offering{}, false
}

func (f *Fake) Create(_ context.Context, req CreateRequest) ([]Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("Create"); err != nil {
		return nil, err
	}
	if req.Count <= 0 || !req.Capacity.Valid() {
		return nil, &Error{Kind: ErrInvalidRequest, Provider: f.ProviderName, Message: fmt.Sprintf("count %d, capacity %q", req.Count, req.Capacity)}
	}
	o, ok := f.findOffering(req.Zone, req.InstanceType)
	if !ok {
		return nil, &Error{Kind: ErrNotFound, Provider: f.ProviderName, Message: fmt.Sprintf("no offering %s in %s", req.InstanceType, req.Zone)}
	}
	key := o.Key(req.Capacity)
	n := req.Count
	if limit, limited := f.Capacity[key]; limited && limit < n {
		n = limit
	}
	out := make([]Instance, 0, n)
	for i := 0; i < n; i++ {
		f.next++
		inst := &Instance{
			ID: fmt.Sprintf("%s-%06d", f.ProviderName, f.next), Provider: f.ProviderName,
			Region: o.Region, Zone: o.Zone, InstanceType: o.InstanceType, GPUType: o.GPUType,
			GPUs: o.GPUsPerInstance, Capacity: req.Capacity, State: StateRunning, JobID: req.JobID,
			Tags: map[string]string{JobTag: req.JobID}, LaunchedAt: f.now(), PricePerHour: o.Price(req.Capacity),
		}
		for k, v := range req.Tags {
			inst.Tags[k] = v
		}
		f.instances[inst.ID] = inst
		f.order = append(f.order, inst.ID)
		f.record(EventCreated, inst)
		f.record(EventRunning, inst)
		out = append(out, *inst)
	}
	if limit, limited := f.Capacity[key]; limited {
		f.Capacity[key] = limit - n
	}
	if n < req.Count {
		return out, &Error{Kind: ErrInsufficientCapacity, Provider: f.ProviderName, Code: "FakeInsufficientCapacity",
			Message: fmt.Sprintf("got %d of %d", n, req.Count), Offering: &key}
	}
	return out, nil
}

func (f *Fake) Describe(_ context.Context, ids []string) ([]Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("Describe"); err != nil {
		return nil, err
	}
	return pick(ids, func(id string) (Instance, bool) {
		inst, ok := f.instances[id]
		if !ok {
			return Instance{}, false
		}
		return *inst, true
	}), nil
}

func (f *Fake) Terminate(_ context.Context, ids []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("Terminate"); err != nil {
		return err
	}
	for _, id := range ids {
		if inst, ok := f.instances[id]; ok && !inst.State.Gone() {
			inst.State = StateTerminated
			f.record(EventTerminated, inst)
		}
	}
	return nil
}

func (f *Fake) List(_ context.Context, tags map[string]string) ([]Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("List"); err != nil {
		return nil, err
	}
	out := pick(f.order, func(id string) (Instance, bool) {
		inst := f.instances[id]
		return *inst, !inst.State.Gone() && hasTags(inst.Tags, tags)
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// pick returns what keep makes of each element of xs it accepts, in order. The result is
// empty, never nil, when none is accepted, since Offerings, Describe and List answer with an
// empty list rather than a null one.
func pick[T, U any](xs []T, keep func(T) (U, bool)) []U {
	out := []U{}
	for _, x := range xs {
		if u, ok := keep(x); ok {
			out = append(out, u)
		}
	}
	return out
}

func hasTags(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// AnnounceNotice gives instance id a preemption notice with deadline.
func (f *Fake) AnnounceNotice(id string, deadline time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	inst, ok := f.instances[id]
	if !ok {
		return fmt.Errorf("no instance %s", id)
	}
	inst.Interruption = &Interruption{Kind: Notice, InstanceID: id, Zone: inst.Zone, Deadline: deadline, At: f.now()}
	f.record(EventNotice, inst)
	return nil
}

// Preempt reclaims instance id now.
func (f *Fake) Preempt(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	inst, ok := f.instances[id]
	if !ok {
		return fmt.Errorf("no instance %s", id)
	}
	now := f.now()
	inst.State = StatePreempted
	inst.Interruption = &Interruption{Kind: Preempted, InstanceID: id, Zone: inst.Zone, Deadline: now, At: now}
	f.record(EventPreempted, inst)
	return nil
}

// Forget drops instance id entirely, as a provider does some time after termination.
func (f *Fake) Forget(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.instances, id)
}

// CallCount returns how often op was called.
func (f *Fake) CallCount(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.Calls {
		if c == op {
			n++
		}
	}
	return n
}
