package sim

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/internal/wait"
)

// TestRunDrivesTheClock checks the live driver without sleeping: it polls for simulated
// time to pass, with a deadline, while API calls interleave with the driver.
func TestRunDrivesTheClock(t *testing.T) {
	zone, typ := "us-east-1a", "p3.2xlarge"
	cfg := oneOffering(zone, typ, Constant(100))
	cfg.TimeScale = 3600 // an hour per wall second
	cfg.Tick = 5 * time.Millisecond
	m := newMarket(t, cfg)

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()

	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				_, err := m.Create(ctx, spotReq(zone, typ, 1))
				assert.NoError(t, err)
				_, _ = m.Offerings(ctx, cloud.OfferingFilter{})
				_ = m.EventsSince(0)
			}
		}()
	}
	wg.Wait()

	require.Eventually(t, func() bool {
		running := ofKind(m.EventsSince(0), cloud.EventRunning)
		return m.Now().Sub(DefaultStart) > 10*time.Minute && len(running) == 40
	}, 10*time.Second, time.Millisecond, "the driver boots instances as simulated time passes")

	cancel()
	require.ErrorIs(t, wait.Recv(t, done, 10*time.Second, "Run to return after cancel"), context.Canceled)
}
