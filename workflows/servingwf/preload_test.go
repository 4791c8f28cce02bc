package servingwf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A standby's preload ends in time for the switch before the machine is reclaimed: it gets
// what is left of the notice less the switch's reserve, and never less than the fixed bound
// (which is also what a notice without a deadline gets).
func TestStandbyPreloadIsBoundedByTheNoticesDeadline(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name      string
		reclaimAt time.Time
		want      time.Duration
	}{
		{"no deadline", time.Time{}, StandbyPreload},
		{"an AWS notice's two minutes, a minute of it spent buying and booting", now.Add(time.Minute), time.Minute - SwitchReserve},
		{"less left than the switch needs", now.Add(SwitchReserve / 2), StandbyPreload},
		{"the deadline passed", now.Add(-time.Second), StandbyPreload},
	} {
		assert.Equal(t, c.want, standbyPreload(c.reclaimAt, now), c.name)
	}
}
