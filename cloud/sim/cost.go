package sim

import "github.com/schooner-ml/schooner/cloud"

// Billing follows what AWS and GCP do for Linux VMs: an instance is charged per second from
// the moment it is running (boot done) until it is terminated or preempted, with a minimum
// of ProviderParams.MinBilled once it ran; pending time is free. A spot instance pays the
// offering's current spot price second by second, so price drift reaches running instances
// (AWS charges the spot price in effect, not the one at launch); on-demand pays the list
// price. Create answers with the price at launch; Describe with the price in effect.

// priceOf is what inst costs per hour right now.
func priceOf(inst *instance) float64 {
	if inst.Capacity == cloud.Spot {
		return inst.off.SpotPrice
	}
	return inst.off.OnDemandPrice
}

func (m *Market) startBilling(inst *instance) {
	inst.billing = true
	inst.runFrom = m.now
	inst.billedTo = m.now
}

// settle charges inst up to now at its current price.
func (m *Market) settle(inst *instance) {
	if !inst.billing || !m.now.After(inst.billedTo) {
		return
	}
	inst.cost += priceOf(inst) * m.now.Sub(inst.billedTo).Hours()
	inst.billedTo = m.now
}

// stopBilling settles inst and charges the minimum if it ran for less.
func (m *Market) stopBilling(inst *instance) {
	if !inst.billing {
		return
	}
	m.settle(inst)
	if ran := m.now.Sub(inst.runFrom); ran < inst.off.params.MinBilled {
		inst.cost += priceOf(inst) * (inst.off.params.MinBilled - ran).Hours()
	}
	inst.billing = false
}

// costNow is what inst has cost up to now, without changing its books.
func (m *Market) costNow(inst *instance) float64 {
	c := inst.cost
	if inst.billing && m.now.After(inst.billedTo) {
		c += priceOf(inst) * m.now.Sub(inst.billedTo).Hours()
	}
	return c
}

// CostUSD is what the instances of job (by cloud.JobTag) have cost up to now, in USD.
func (m *Market) CostUSD(jobID string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	total := m.prunedCost[jobID]
	for _, inst := range m.order {
		if inst.Tags[cloud.JobTag] == jobID {
			total += m.costNow(inst)
		}
	}
	return total
}

// InstanceCost is what instance id has cost up to now, in USD; ok is false for an unknown id.
func (m *Market) InstanceCost(id string) (usd float64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	inst, ok := m.instances[id]
	if !ok {
		return 0, false
	}
	return m.costNow(inst), true
}

// TotalCost is what every instance ever created has cost up to now, in USD.
func (m *Market) TotalCost() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	total := m.prunedTotal
	for _, inst := range m.order {
		total += m.costNow(inst)
	}
	return total
}
