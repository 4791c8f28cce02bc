package training

import (
	"fmt"
	"time"

	"github.com/schooner-ml/schooner/cloud"
)

// Deadline is a parsed spec deadline: either relative to submission or an absolute time.
type Deadline struct {
	After time.Duration
	At    time.Time
}

// ParseDeadline reads a spec's deadline: a positive Go duration ("6h", "90m") counted from
// submission, or an RFC 3339 time.
func ParseDeadline(s string) (Deadline, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return Deadline{}, fmt.Errorf("duration %q must be positive", s)
		}
		return Deadline{After: d}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return Deadline{}, fmt.Errorf("%q is neither a duration (\"6h\") nor an RFC 3339 time (\"2026-01-02T15:04:05Z\")", s)
	}
	return Deadline{At: t}, nil
}

// Resolve turns the deadline into a wall-clock time, given when the job was submitted and
// the time scale of its provider: a duration counts the provider's time (hours of simulated
// market at 60× pass in minutes), an absolute time is taken as is.
func (d Deadline) Resolve(submitted time.Time, scale cloud.TimeScale) time.Time {
	if d.After > 0 {
		return submitted.Add(scale.Wall(d.After))
	}
	return d.At
}
