package sim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
)

var ctx = context.Background()

// steps builds an instance-count trace from (offset, count) pairs.
func steps(pairs ...any) *Trace {
	t := &Trace{Unit: Instances}
	for i := 0; i < len(pairs); i += 2 {
		t.Steps = append(t.Steps, Step{At: pairs[i].(time.Duration), Count: pairs[i+1].(int)})
	}
	return t
}

// newMarket builds a market or fails the test.
func newMarket(t *testing.T, cfg Config) *Market {
	t.Helper()
	m, err := New(cfg)
	require.NoError(t, err)
	return m
}

// oneOffering simulates only typ in zone with the given capacity and fixed prices.
func oneOffering(zone, typ string, c Capacity) Config {
	return Config{Seed: 1, Zones: []string{zone}, InstanceTypes: []string{typ},
		Capacity: map[Key]Capacity{{Zone: zone, InstanceType: typ}: c}, Price: PriceModel{Fixed: true}}
}

func spotReq(zone, typ string, n int) cloud.CreateRequest {
	return cloud.CreateRequest{JobID: "job-1", Zone: zone, InstanceType: typ, Capacity: cloud.Spot, Count: n}
}

// ofKind keeps the events of kind.
func ofKind(events []cloud.Event, kind cloud.EventKind) []cloud.Event {
	var out []cloud.Event
	for _, e := range events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}
