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

// Internal ports are picked before any is bound: a pick that gives a port already chosen (the
// user's, or another internal one) is passed over.
func TestInternalPortsAreNeverOnesAlreadyPicked(t *testing.T) {
	next := []int{7233, 40001, 40001, 8233, 40002}
	pick := func(string) (int, error) {
		p := next[0]
		next = next[1:]
		return p, nil
	}
	taken := map[int]bool{7233: true, 8233: true}
	a, err := freePortExcept(pick, "127.0.0.1", taken)
	assert.NoError(t, err)
	b, err := freePortExcept(pick, "127.0.0.1", taken)
	assert.NoError(t, err)
	assert.Equal(t, []int{40001, 40002}, []int{a, b})

	always := func(string) (int, error) { return 7233, nil }
	_, err = freePortExcept(always, "127.0.0.1", taken)
	assert.ErrorContains(t, err, "no free port")
}
