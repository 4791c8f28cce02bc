package training

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/schooner-ml/schooner/cloud"
)

// The poll and the retry follow the provider's time: a simulated minute (two for the retry)
// at any scale between 3× and 240×, the wall defaults on a real cloud, and what the caller set
// whatever the scale.
func TestScaledToPollsInTheProvidersTime(t *testing.T) {
	for _, c := range []struct {
		scale       cloud.TimeScale
		poll, retry time.Duration
	}{
		{cloud.Real, 3 * time.Second, 5 * time.Second},
		{60, time.Second, 2 * time.Second},
		{240, 250 * time.Millisecond, 500 * time.Millisecond},
		{10000, 250 * time.Millisecond, 250 * time.Millisecond},
	} {
		o := JobOptions{}.ScaledTo(c.scale)
		assert.Equal(t, c.poll, o.PollInterval, "poll at %v×", c.scale)
		assert.Equal(t, c.retry, o.RetryWait, "retry at %v×", c.scale)
		assert.Equal(t, 10*time.Second, o.HeartbeatTimeout, "the other defaults apply")
	}
	set := JobOptions{PollInterval: 7 * time.Second, RetryWait: time.Second}.ScaledTo(240)
	assert.Equal(t, 7*time.Second, set.PollInterval)
	assert.Equal(t, time.Second, set.RetryWait)
}
