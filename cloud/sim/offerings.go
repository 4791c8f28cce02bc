package sim

import (
	"context"

	"github.com/schooner-ml/schooner/cloud"
)

// Offerings lists the simulated offerings that pass f, ordered by zone then instance type,
// with the current spot price and, as SpotCapacity, how many spot instances Create would give
// now.
func (m *Market) Offerings(ctx context.Context, f cloud.OfferingFilter) ([]cloud.Offering, error) {
	if err := m.lockFor(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := []cloud.Offering{}
	for _, o := range m.offerings {
		offer := o.Offering
		offer.SpotCapacity = o.free()
		if f.Match(offer) {
			out = append(out, offer)
		}
	}
	return out, nil
}

// SpotCapacity returns the spot capacity of instanceType in zone now: level is how many
// instances the zone can hold in all, free how many more Create would give. ok is false when
// the offering is not simulated.
func (m *Market) SpotCapacity(zone, instanceType string) (level, free int, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.byKey[Key{Zone: zone, InstanceType: instanceType}]
	if !ok {
		return 0, 0, false
	}
	return o.level, o.free(), true
}
