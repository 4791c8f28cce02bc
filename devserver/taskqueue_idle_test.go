package devserver

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// A node queue stays loaded in the matching service only while someone polls it. Spot
// instances come and go, each with a queue of its own; queues nobody polls any more must be
// unloaded with their goroutines, or a dev server that ran a few hundred jobs holds tens of
// thousands of goroutines (and their memory and timers) for queues of dead machines.
func TestUnpolledTaskQueuesAreUnloaded(t *testing.T) {
	port, err := FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Start(Options{Port: port, Headless: true, ServerLogLevel: "error", TaskQueueIdle: 2 * time.Second,
		Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c, err := client.Dial(client.Options{HostPort: srv.Address(), Namespace: srv.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	settled := func() int {
		runtime.GC()
		time.Sleep(200 * time.Millisecond)
		return runtime.NumGoroutine()
	}
	before := settled()
	const nodes = 20
	var ws []worker.Worker
	for i := range nodes {
		w := worker.New(c, fmt.Sprintf("schooner-node-idle-test-%d", i), worker.Options{})
		w.RegisterActivityWithOptions(func(context.Context) error { return nil }, activity.RegisterOptions{Name: "noop"})
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	time.Sleep(time.Second) // the polls reach the matching service and load the queues
	loaded := settled()
	for _, w := range ws {
		w.Stop()
	}
	deadline := time.Now().Add(30 * time.Second)
	left := settled()
	for left > before+nodes && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		left = settled()
	}
	t.Logf("goroutines: %d before, %d with %d node queues polled, %d after they stopped", before, loaded, nodes, left)
	if left > before+nodes {
		t.Errorf("%d goroutines left for %d node queues nobody polls (%d before they were polled)", left-before, nodes, before)
	}
}
