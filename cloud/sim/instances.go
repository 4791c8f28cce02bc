package sim

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/schooner-ml/schooner/cloud"
)

// instance is one simulated machine with its books.
type instance struct {
	cloud.Instance
	off *offering
	// leaving is set once a notice is out: the instance no longer counts against capacity.
	leaving bool

	// token is the client token the instance was launched with, forgotten with it.
	token string

	billing  bool
	runFrom  time.Time
	billedTo time.Time
	cost     float64
}

// snapshot is a copy of the public view that later changes cannot reach.
func (inst *instance) snapshot() cloud.Instance {
	out := inst.Instance
	out.Tags = maps.Clone(inst.Tags)
	if inst.Interruption != nil {
		intr := *inst.Interruption
		out.Interruption = &intr
	}
	return out
}

// Describe returns the named instances, gone ones included (a preempted instance still says
// so), a live one at the price in effect now (what it is billed); unknown ids are left out.
func (m *Market) Describe(ctx context.Context, ids []string) ([]cloud.Instance, error) {
	if err := m.lockFor(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := []cloud.Instance{}
	for _, id := range ids {
		if inst, ok := m.instances[id]; ok {
			in := inst.snapshot()
			if !in.State.Gone() {
				in.PricePerHour = priceOf(inst)
			}
			out = append(out, in)
		}
	}
	return out, nil
}

// Terminate ends the named instances now and stops their billing. Unknown and already gone
// ids are ignored, so retrying is safe.
func (m *Market) Terminate(ctx context.Context, ids []string) error {
	if err := m.lockFor(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	for _, id := range ids {
		inst, ok := m.instances[id]
		if !ok || inst.State.Gone() {
			continue
		}
		m.stopBilling(inst)
		inst.State = cloud.StateTerminated
		m.writeUsage(inst)
		m.release(inst)
		m.record(cloud.EventTerminated, inst)
	}
	return nil
}

// List returns the live (pending or running) instances carrying every given tag, oldest
// first.
func (m *Market) List(ctx context.Context, tags map[string]string) ([]cloud.Instance, error) {
	if err := m.lockFor(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := []cloud.Instance{}
	for _, inst := range m.order {
		if inst.State.Gone() || !hasTags(inst.Tags, tags) {
			continue
		}
		out = append(out, inst.snapshot())
	}
	return out, nil
}

// lockFor takes m.mu for a provider call whose context is still live. When ctx is done it
// returns ctx's error and takes nothing, so a cancelled call leaves the market untouched;
// otherwise the caller holds m.mu and must unlock it.
func (m *Market) lockFor(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	return nil
}

func hasTags(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// InterruptionOf returns the notice or preemption of instance id, or nil: what the instance
// metadata endpoints would tell a process on that machine.
func (m *Market) InterruptionOf(id string) *cloud.Interruption {
	m.mu.Lock()
	defer m.mu.Unlock()
	inst, ok := m.instances[id]
	if !ok || inst.Interruption == nil {
		return nil
	}
	intr := *inst.Interruption
	return &intr
}

// Watcher returns the interruption watcher of instance id, the simulated counterpart of
// polling AWS IMDS or the GCE metadata server on the machine.
func (m *Market) Watcher(id string) cloud.InterruptionWatcher { return watcher{m: m, id: id} }

type watcher struct {
	m  *Market
	id string
}

func (w watcher) Poll(ctx context.Context) (*cloud.Interruption, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w.m.mu.Lock()
	_, known := w.m.instances[w.id]
	w.m.mu.Unlock()
	if !known {
		return nil, &cloud.Error{Kind: cloud.ErrNotFound, Provider: "sim", Code: "UnknownInstance",
			Message: fmt.Sprintf("no instance %s", w.id)}
	}
	return w.m.InterruptionOf(w.id), nil
}
