package devserver

import (
	"errors"
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOnlyALostInternalPortIsRetried(t *testing.T) {
	opts := Options{IP: "127.0.0.1", Port: 7233, UIPort: 8233}
	internal := errors.New("building Temporal server: ... failed listening for HTTP API on 127.0.0.1:42297: listen tcp 127.0.0.1:42297: bind: address already in use")
	assert.True(t, isInternalPortRace(internal, opts), "an internal port taken meanwhile: try other ports")
	users := errors.New("starting Temporal server: listen tcp 127.0.0.1:7233: bind: address already in use")
	assert.False(t, isInternalPortRace(users, opts), "the user's own port: say so, do not retry")
	assert.False(t, isInternalPortRace(errors.New("database is locked"), opts))
}

// FreePort picks below the ephemeral range, where no outgoing connection takes a port.
func TestFreePortIsBelowTheEphemeralRangeAndFree(t *testing.T) {
	lo, hi := quietPorts()
	require.Equal(t, 10000, hi-lo)
	for range 20 {
		p, err := FreePort("127.0.0.1")
		require.NoError(t, err)
		require.GreaterOrEqual(t, p, lo)
		require.Less(t, p, hi)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		require.NoError(t, err, "the port is free")
		require.NoError(t, ln.Close())
	}
}
