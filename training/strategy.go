package training

import (
	"time"

	"github.com/schooner-ml/schooner/cloud"
)

// SpotStrategy is a job's spot decisions, apart from the workflow that acts on them: which
// offerings to plan on (leaving out those short of capacity and zones that just preempted),
// whether to buy on-demand capacity, and when the deadline calls for adding or dropping it. It
// is a plain value with the clock passed in, so the workflow keeps it in its state
// deterministically and tests exercise it without Temporal. Times are workflow (wall) time;
// the TTLs are the provider's time, converted with Scale.
type SpotStrategy struct {
	Policy SpotPolicy
	// Deadline is when the job must be done (zero: none).
	Deadline time.Time
	Scale    cloud.TimeScale
	// UnavailableTTL and AvoidZoneTTL are how long a short offering and a zone that
	// preempted are left out, in the provider's time.
	UnavailableTTL time.Duration
	AvoidZoneTTL   time.Duration

	// OnDemand is true while on-demand capacity is part of the plan (always, for
	// on-demand-only); SpotIterSeconds is the iteration time of the last spot-only plan.
	OnDemand        bool
	SpotIterSeconds float64
	Unavailable     cloud.ExpirySet
	Avoided         cloud.ExpirySet
}

// SpotOff reports whether spot capacity is never bought.
func (s *SpotStrategy) SpotOff() bool { return s.Policy == OnDemandOnly }

// BuysOnDemand reports whether on-demand capacity is to be planned on now.
func (s *SpotStrategy) BuysOnDemand() bool { return s.OnDemand || s.SpotOff() }

// KeepsSurvivor reports whether a held instance of capacity c may stay in the next plan:
// on-demand machines are dropped as soon as the job is back on spot alone.
func (s *SpotStrategy) KeepsSurvivor(c cloud.CapacityType) bool {
	return c == cloud.Spot || s.BuysOnDemand()
}

// Usable drops the offerings of avoided zones and those whose spot capacity is marked short;
// while on-demand capacity is bought, an offering short of spot stays with its spot capacity
// zeroed unless its on-demand side is short too.
func (s *SpotStrategy) Usable(offers []cloud.Offering, now time.Time) []cloud.Offering {
	s.Unavailable.Prune(now)
	s.Avoided.Prune(now)
	out := []cloud.Offering{}
	for _, o := range offers {
		if s.Avoided.HasZone(o.Zone, now) {
			continue
		}
		if s.Unavailable.Has(o.Key(cloud.Spot), now) {
			if !s.OnDemand || s.Unavailable.Has(o.Key(cloud.OnDemand), now) {
				continue
			}
			o.SpotCapacity = 0
		}
		out = append(out, o)
	}
	return out
}

// Preempted avoids the zone of a preempted instance for AvoidZoneTTL: a zone that preempts
// tends to preempt again soon.
func (s *SpotStrategy) Preempted(zone string, now time.Time) {
	s.Avoided.Add(cloud.OfferingKey{Zone: zone}, now.Add(s.Scale.Wall(s.AvoidZoneTTL)))
}

// Short marks offerings that could not be had for UnavailableTTL.
func (s *SpotStrategy) Short(keys []cloud.OfferingKey, now time.Time) {
	for _, k := range keys {
		s.Unavailable.Add(k, now.Add(s.Scale.Wall(s.UnavailableTTL)))
	}
}

// Planned records a plan's iteration time: a spot-only plan's is what the deadline check
// compares against when it considers going back to spot.
func (s *SpotStrategy) Planned(iterSeconds float64) {
	if !s.BuysOnDemand() {
		s.SpotIterSeconds = iterSeconds
	}
}

// DeadlineCheck decides, for spot-with-fallback with a deadline, whether to add on-demand
// capacity (the remaining iterations at the running plan's pace would miss the deadline) or
// drop it (spot alone finishes with 20% of the slack to spare). It reports whether the
// decision changed, in which case the job replans.
func (s *SpotStrategy) DeadlineCheck(now time.Time, itersLeft int64, iterSeconds float64) bool {
	if s.Deadline.IsZero() || s.Policy != SpotWithFallback {
		return false
	}
	eta := func(iter float64) time.Time {
		return now.Add(s.Scale.Wall(time.Duration(float64(itersLeft) * iter * float64(time.Second))))
	}
	if !s.OnDemand && eta(iterSeconds).After(s.Deadline) {
		s.OnDemand = true
		return true
	}
	if s.OnDemand && s.SpotIterSeconds > 0 {
		slack := s.Deadline.Sub(now)
		if eta(s.SpotIterSeconds).Before(now.Add(slack * 8 / 10)) {
			s.OnDemand = false
			return true
		}
	}
	return false
}

// Waiting decides, for spot-with-fallback with a deadline, whether a job that found no plan
// and is waiting for spot capacity must buy on-demand capacity now: waiting one more retry
// and then running the remaining iterations at the pace it last planned would miss the
// deadline. A job waiting makes no progress, so the check DeadlineCheck makes while training
// would never fire. With no pace known yet it cannot tell and keeps waiting. It reports
// whether the decision changed.
func (s *SpotStrategy) Waiting(now time.Time, wait time.Duration, itersLeft int64, iterSeconds float64) bool {
	if s.Deadline.IsZero() || s.Policy != SpotWithFallback || s.OnDemand || iterSeconds <= 0 {
		return false
	}
	run := s.Scale.Wall(time.Duration(float64(itersLeft) * iterSeconds * float64(time.Second)))
	if now.Add(wait).Add(run).After(s.Deadline) {
		s.OnDemand = true
		return true
	}
	return false
}
