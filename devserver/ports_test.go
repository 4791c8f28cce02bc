package devserver

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOnlyALostInternalPortIsRetried(t *testing.T) {
	opts := Options{IP: "127.0.0.1", Port: 7233, UIPort: 8233}
	internal := errors.New("building Temporal server: ... failed listening for HTTP API on 127.0.0.1:42297: listen tcp 127.0.0.1:42297: bind: address already in use")
	assert.True(t, isInternalPortRace(internal, opts), "an internal port taken meanwhile: try other ports")
	users := errors.New("starting Temporal server: listen tcp 127.0.0.1:7233: bind: address already in use")
	assert.False(t, isInternalPortRace(users, opts), "the user's own port: say so, do not retry")
	assert.False(t, isInternalPortRace(errors.New("database is locked"), opts))
}
