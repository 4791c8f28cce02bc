package cloud

import "time"

// TimeScale is how many seconds pass in a provider's world per wall-clock second: 1 for a
// real cloud, more for the simulated market, which replays hours of spot history in minutes.
// Prices, notice periods, boot times and iteration times are in the provider's (simulated)
// time; timers and deadlines in a workflow run on wall time. Every conversion goes through
// Wall and Sim, so no caller divides by hand.
type TimeScale float64

// Real is the time scale of a real cloud.
const Real TimeScale = 1

// Wall converts a duration of the provider's time to wall time.
func (s TimeScale) Wall(sim time.Duration) time.Duration {
	return time.Duration(float64(sim) / s.orReal())
}

// Sim converts a wall-time duration to the provider's time.
func (s TimeScale) Sim(wall time.Duration) time.Duration {
	return time.Duration(float64(wall) * s.orReal())
}

// SimHours is the provider's hours that pass during a wall-time duration (what billing counts).
func (s TimeScale) SimHours(wall time.Duration) float64 { return s.Sim(wall).Hours() }

// orReal treats an unset or invalid scale as a real cloud's.
func (s TimeScale) orReal() float64 {
	if s <= 0 {
		return 1
	}
	return float64(s)
}

// Scaled is implemented by a provider whose time runs at another pace than the wall clock.
type Scaled interface {
	TimeScale() TimeScale
}

// TimeScaleOf is p's time scale: Real unless p says otherwise.
func TimeScaleOf(p Provider) TimeScale {
	if s, ok := p.(Scaled); ok {
		return TimeScale(s.TimeScale().orReal())
	}
	return Real
}
