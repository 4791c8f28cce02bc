// Package pace chooses how long a poller waits before its next look: briefly while what it
// watches is changing, at its usual rate once it has settled, and at the usual rate again
// after a spell of change that lasts too long (a pipeline stuck without capacity must not be
// asked about ten times a second for hours).
package pace

import "time"

// Pace is a poller's cadence. The zero value of a field takes its default from New.
type Pace struct {
	// Every is the pause while settled; Fast while unsettled, for at most FastFor of one
	// unsettled spell.
	Every, Fast, FastFor time.Duration

	since time.Time // start of the current unsettled spell; zero while settled
}

// New is a Pace with the given usual pause, a fast pause of a fifth of it and fast polling
// for at most five minutes of one unsettled spell.
func New(every time.Duration) *Pace {
	return &Pace{Every: every, Fast: every / 5, FastFor: 5 * time.Minute}
}

// Next is the pause after a look at now that found the watched thing settled or not.
func (p *Pace) Next(settled bool, now time.Time) time.Duration {
	if settled {
		p.since = time.Time{}
		return p.Every
	}
	if p.since.IsZero() {
		p.since = now
	}
	if p.Fast <= 0 || p.Fast >= p.Every || now.Sub(p.since) >= p.FastFor {
		return p.Every
	}
	return p.Fast
}
