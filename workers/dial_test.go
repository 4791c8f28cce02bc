package workers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/devserver"
	"github.com/schooner-ml/schooner/workers"
)

// A worker started before its server waits for it (WaitForServer) instead of exiting; without
// the wait, a server that is not there fails the dial at once, naming the address.
func TestDialWaitsForAServerThatIsNotUpYet(t *testing.T) {
	port, err := devserver.FreePort("127.0.0.1")
	require.NoError(t, err)
	cfg := workers.ClientConfig{Address: fmt.Sprintf("127.0.0.1:%d", port)}
	logger := workers.NewTemporalLogger(zerolog.Nop())

	start := time.Now()
	_, err = workers.Dial(context.Background(), cfg, logger, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), cfg.Address)
	assert.Less(t, time.Since(start), 15*time.Second, "no wait asked for")

	up := make(chan *devserver.Server, 1)
	go func() {
		time.Sleep(2 * time.Second)
		srv, err := devserver.Start(devserver.Options{Port: port, Headless: true})
		assert.NoError(t, err)
		up <- srv
	}()
	cfg.WaitForServer = 2 * time.Minute
	c, err := workers.Dial(context.Background(), cfg, logger, nil)
	srv := <-up
	if srv != nil {
		defer srv.Stop()
	}
	require.NoError(t, err, "the server came up while the dial waited")
	c.Close()
}
