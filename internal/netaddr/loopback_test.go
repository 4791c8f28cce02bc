package netaddr

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIsLoopback(t *testing.T) {
	for _, h := range []string{"127.0.0.1", "127.0.0.2", "::1", "localhost"} {
		assert.True(t, IsLoopback(h), h)
	}
	for _, h := range []string{"0.0.0.0", "::", "", "10.0.0.5", "example.com"} {
		assert.False(t, IsLoopback(h), h)
	}
}
