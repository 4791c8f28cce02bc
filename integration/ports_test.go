package integration

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return n
}
