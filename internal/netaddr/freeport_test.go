package netaddr

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

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
