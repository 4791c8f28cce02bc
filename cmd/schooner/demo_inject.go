//go:build !agentonly

package main

import (
	"github.com/schooner-ml/schooner/cloud/sim"
)

// preemptInstance preempts an instance of the simulated market: after the provider's own
// notice period, or at once with no notice.
func preemptInstance(m *sim.Market, id string, notice bool) error {
	if notice {
		return m.PreemptWithNotice(id)
	}
	return m.Preempt(id, 0)
}

// drainZone leaves the zone's spot offerings no free capacity (until their models change).
func drainZone(m *sim.Market, zone string) error {
	_, err := m.Drain(zone)
	return err
}
