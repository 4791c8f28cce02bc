package cloud

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Multi spreads one job over several providers: offerings are merged, a create goes to the
// provider that offers the zone, and instance calls go to every provider (each ignores ids it
// does not know). Zone names never collide between AWS and GCP, which is what makes routing
// by zone safe.
type Multi struct {
	Providers []Provider
	// Scale, when set, is the members' time scale: the faces of a simulated market reached
	// through the real SDKs cannot tell their pace, so whoever points at them says it.
	Scale TimeScale
}

var _ Provider = (*Multi)(nil)

// Name joins the member names, e.g. "aws+gcp".
func (m *Multi) Name() string {
	names := make([]string, len(m.Providers))
	for i, p := range m.Providers {
		names[i] = p.Name()
	}
	return strings.Join(names, "+")
}

// Offerings merges every provider's offerings, sorted by price per GPU-hour then zone. One
// provider failing fails the call: a partial list would make the planner choose on half the
// market without knowing it.
func (m *Multi) Offerings(ctx context.Context, f OfferingFilter) ([]Offering, error) {
	var out []Offering
	for _, p := range m.Providers {
		offers, err := p.Offerings(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("listing %s offerings: %w", p.Name(), err)
		}
		out = append(out, offers...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		pi, pj := perGPU(out[i]), perGPU(out[j])
		if pi != pj {
			return pi < pj
		}
		return out[i].Zone < out[j].Zone
	})
	return out, nil
}

func perGPU(o Offering) float64 {
	if o.GPUsPerInstance <= 0 {
		return o.SpotPrice
	}
	return o.SpotPrice / float64(o.GPUsPerInstance)
}

// Create sends req to the provider that offers req.InstanceType in req.Zone.
func (m *Multi) Create(ctx context.Context, req CreateRequest) ([]Instance, error) {
	for _, p := range m.Providers {
		offers, err := p.Offerings(ctx, OfferingFilter{Zones: []string{req.Zone}, InstanceTypes: []string{req.InstanceType}})
		if err != nil {
			return nil, fmt.Errorf("finding the provider of %s in %s: %w", req.InstanceType, req.Zone, err)
		}
		if len(offers) > 0 {
			return p.Create(ctx, req)
		}
	}
	return nil, &Error{Kind: ErrNotFound, Provider: m.Name(), Message: fmt.Sprintf("no provider offers %s in %s", req.InstanceType, req.Zone)}
}

// Describe asks every provider and merges the answers.
func (m *Multi) Describe(ctx context.Context, ids []string) ([]Instance, error) {
	return m.collect(func(p Provider) ([]Instance, error) { return p.Describe(ctx, ids) })
}

// List asks every provider and merges the answers.
func (m *Multi) List(ctx context.Context, tags map[string]string) ([]Instance, error) {
	return m.collect(func(p Provider) ([]Instance, error) { return p.List(ctx, tags) })
}

// Terminate asks every provider to terminate ids; each ignores ids it does not know. All
// providers are tried even when one fails, so one outage does not leak the others' machines.
func (m *Multi) Terminate(ctx context.Context, ids []string) error {
	var errs []error
	for _, p := range m.Providers {
		if err := p.Terminate(ctx, ids); err != nil {
			errs = append(errs, fmt.Errorf("terminating on %s: %w", p.Name(), err))
		}
	}
	return errors.Join(errs...)
}

func (m *Multi) collect(call func(Provider) ([]Instance, error)) ([]Instance, error) {
	out := []Instance{}
	for _, p := range m.Providers {
		got, err := call(p)
		if err != nil {
			return nil, fmt.Errorf("asking %s: %w", p.Name(), err)
		}
		out = append(out, got...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// TimeScale is the first member's that runs at another pace than the wall clock (members of
// one Multi share a clock in practice: all real, or one simulated market's faces).
func (m *Multi) TimeScale() TimeScale {
	if m.Scale > 0 {
		return m.Scale
	}
	for _, p := range m.Providers {
		if s := TimeScaleOf(p); s != Real {
			return s
		}
	}
	return Real
}
