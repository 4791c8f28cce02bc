package trainingwf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/workflows/internal/jobwf"
)

// A machine still booting costs nothing yet (providers bill from boot) once the job follows
// its machines' states; before, it was counted from the acquisition.
func TestTheMeterSkipsMachinesStillBooting(t *testing.T) {
	start := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	held := []cloud.Instance{{ID: "up", State: cloud.StateRunning, PricePerHour: 1}, {ID: "booting", State: cloud.StatePending, PricePerHour: 2}}
	for _, tc := range []struct {
		fromBoot bool
		want     float64
	}{{false, 3}, {true, 1}} {
		j := &job{held: held, scale: 60, odPrice: map[string]float64{}, meter: jobwf.Meter{Last: start}, meterFromBoot: tc.fromBoot}
		j.accrue(start.Add(time.Minute)) // one simulated hour at 60x
		assert.InDelta(t, tc.want, j.status.CostUSD, 1e-9, "following states: %v", tc.fromBoot)
	}
}
