package workers

import (
	"context"
	"sync"
	"time"
)

// startPolling runs poll at once and then every interval, in a goroutine counted by wg,
// until ctx ends. SimNodes and the PreemptionRelay both follow the market's event log this
// way.
func startPolling(ctx context.Context, wg *sync.WaitGroup, interval time.Duration, poll func(context.Context)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			poll(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}
