package jobwf

import (
	"slices"
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
// in order, so the sums are the same floats on replay. It returns the provider hours it
// accrued, so a caller can count GPU-hours on the same clock.
func (m *Meter) Accrue(now time.Time, scale cloud.TimeScale, held []cloud.Instance, odPrice map[string]float64, cost, onDemand *float64) (hours float64) {
	dt := now.Sub(m.Last)
	m.Last = now
	if dt <= 0 {
		return 0
	}
	hours = scale.SimHours(dt)
	for _, in := range held {
		*cost += in.PricePerHour * hours
		od := odPrice[in.ID]
		if od == 0 {
			od = in.PricePerHour
		}
		*onDemand += od * hours
	}
	return hours
}

// VersionMeterCurrentPrice gates a meter that takes the price a describe gives for a held
// machine (the one in effect: spot prices move, and the provider bills the current one);
// runs recorded before kept each machine's price at its acquisition. TrainingJob and
// ServingDeployment use the same change id.
const VersionMeterCurrentPrice = "meter-current-price"

// TakeDescribedPrices sets each held machine's price to the one a describe gave for it, where
// the provider gave one and the machine is still live (a gone machine keeps the last price it
// was billed at). Accrue what was held until now first: the new prices count from now on.
func TakeDescribedPrices(held, got []cloud.Instance) {
	for _, in := range got {
		if in.PricePerHour <= 0 || in.State.Gone() {
			continue
		}
		for i := range held {
			if held[i].ID == in.ID {
				held[i].PricePerHour = in.PricePerHour
			}
		}
	}
}

// Billed is the held machines a provider bills for now, as far as the last describes tell: not
// one still booting (the clouds, and the simulated market, bill from running), nor, with
// skipGone, one the provider said is gone (it stays held while the job winds it down). A
// machine's state is the one it was acquired in until TakeDescribedStates updates it.
func Billed(held []cloud.Instance, skipGone bool) []cloud.Instance {
	return slices.DeleteFunc(slices.Clone(held), func(in cloud.Instance) bool {
		return in.State == cloud.StatePending || (skipGone && in.State.Gone())
	})
}

// TakeDescribedStates sets each held machine's state to the one a describe gave for it.
// Accrue what was held until now first: the new states count from now on.
func TakeDescribedStates(held, got []cloud.Instance) {
	for _, in := range got {
		for i := range held {
			if held[i].ID == in.ID && in.State != "" {
				held[i].State = in.State
			}
		}
	}
}
