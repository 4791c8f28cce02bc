package jobwf

import (
	"time"

	"github.com/schooner-ml/schooner/cloud"
)

// Meter accrues what a job's instances cost as workflow time passes.
type Meter struct {
	// Last is when the cost was last accrued.
	Last time.Time
}

// Accrue adds to *cost the price of holding the instances since m.Last, in the provider's
// hours (scale), and to *onDemand the same holding at the on-demand prices in odPrice (an
// instance without one at its own price), for the comparison. Instances are added one by one
// in order, so the sums are the same floats on replay.
func (m *Meter) Accrue(now time.Time, scale cloud.TimeScale, held []cloud.Instance, odPrice map[string]float64, cost, onDemand *float64) {
	dt := now.Sub(m.Last)
	m.Last = now
	if dt <= 0 {
		return
	}
	hours := scale.SimHours(dt)
	for _, in := range held {
		*cost += in.PricePerHour * hours
		od := odPrice[in.ID]
		if od == 0 {
			od = in.PricePerHour
		}
		*onDemand += od * hours
	}
}
