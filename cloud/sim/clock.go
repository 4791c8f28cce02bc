package sim

import (
	"context"
	"time"
)

// Now is the market's simulated time.
func (m *Market) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// AdvanceTo moves simulated time to t, carrying out in order everything scheduled up to and
// including t: capacity changes, boots, notices, preemptions and price steps. Time never goes
// back: a t before Now does nothing.
func (m *Market) AdvanceTo(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance(t)
}

// Advance moves simulated time forward by d (see AdvanceTo).
func (m *Market) Advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance(m.now.Add(d))
}

// advance is AdvanceTo with m.mu held.
func (m *Market) advance(t time.Time) {
	for {
		it, ok := m.queue.due(t)
		if !ok {
			break
		}
		m.now = it.at
		m.run(it)
	}
	if t.After(m.now) {
		m.now = t
	}
	m.prune()
}

// run carries out one scheduled item at m.now.
func (m *Market) run(it *item) {
	switch it.act {
	case actCapacity:
		m.setCapacity(it.off, it.level)
		m.scheduleCapacity(it.off)
	case actPrice:
		m.stepPrice(it.off)
	case actBoot:
		m.boot(it.inst)
	case actPreempt:
		m.preempt(it.inst)
	}
}

// Run drives the clock from wall time until ctx ends: every Config.Tick it advances the market
// to where it stood when Run began plus TimeScale times the wall time elapsed since. API calls
// interleave freely with it. It returns ctx.Err().
func (m *Market) Run(ctx context.Context) error {
	m.mu.Lock()
	simStart, scale, tick := m.now, m.cfg.TimeScale, m.cfg.Tick
	m.mu.Unlock()
	wallStart := time.Now()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case w := <-ticker.C:
			elapsed := float64(w.Sub(wallStart)) * scale
			m.AdvanceTo(simStart.Add(time.Duration(elapsed)))
		}
	}
}
