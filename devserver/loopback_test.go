package devserver

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTheEmbeddedServerBindsLoopbackOnly(t *testing.T) {
	for _, ip := range []string{"127.0.0.1", "127.0.0.2", "::1", "localhost"} {
		assert.NoError(t, checkLoopback(ip), ip)
	}
	for _, ip := range []string{"0.0.0.0", "::", "10.0.0.5", "192.168.1.2", "example.com"} {
		assert.ErrorContains(t, checkLoopback(ip), "no authentication", ip)
	}
	_, err := Start(Options{IP: "0.0.0.0", Port: 1, Headless: true})
	assert.ErrorContains(t, err, "SSH tunnel", "refused before anything starts")
}
