package sim

import (
	"math"
	"time"
)

// startPrice sets o's initial spot price (the catalog's typical one, within the band) and
// schedules its first step.
func (m *Market) startPrice(o *offering) {
	p := m.cfg.Price
	o.basePrice = o.SpotPrice
	o.low, o.high = p.Low*o.OnDemandPrice, p.High*o.OnDemandPrice
	o.SpotPrice = clamp(o.basePrice, o.low, o.high)
	if p.Fixed {
		o.SpotPrice = o.basePrice
		return
	}
	o.priceRand = stream(m.cfg.Seed, "price", o.Provider, o.Zone, o.InstanceType)
	m.schedulePrice(o)
}

func (m *Market) schedulePrice(o *offering) {
	p := m.cfg.Price
	span := float64(p.MaxInterval - p.MinInterval)
	wait := p.MinInterval + time.Duration(o.priceRand.Float64()*span)
	wait = max(wait.Round(time.Second), time.Second)
	m.queue.schedule(&item{at: m.now.Add(wait), act: actPrice, off: o})
}

// stepPrice moves o's spot price one step: a random relative move of up to MaxStep plus a
// tenth of the way back to the typical price, so the walk wanders but does not run off,
// rounded to the 4 decimals EC2 quotes spot prices in and kept within the band. Running spot
// instances are billed at the old price up to now first, as AWS bills the current spot price.
func (m *Market) stepPrice(o *offering) {
	for _, inst := range o.spot {
		m.settle(inst)
	}
	move := (o.priceRand.Float64()*2 - 1) * m.cfg.Price.MaxStep * o.SpotPrice
	next := o.SpotPrice + move + 0.1*(o.basePrice-o.SpotPrice)
	o.SpotPrice = clamp(math.Round(next*1e4)/1e4, o.low, o.high)
	m.schedulePrice(o)
}

// SpotPrice returns the current spot price of instanceType in zone, USD per hour.
func (m *Market) SpotPrice(zone, instanceType string) (float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.byKey[Key{Zone: zone, InstanceType: instanceType}]
	if !ok {
		return 0, false
	}
	return o.SpotPrice, true
}

func clamp(v, lo, hi float64) float64 { return math.Min(math.Max(v, lo), hi) }
