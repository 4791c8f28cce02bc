package pace

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestNextIsFastWhileUnsettledForAtMostFastFor(t *testing.T) {
	p := New(500 * time.Millisecond)
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	assert.Equal(t, 500*time.Millisecond, p.Next(true, t0))
	assert.Equal(t, 100*time.Millisecond, p.Next(false, t0))
	assert.Equal(t, 100*time.Millisecond, p.Next(false, t0.Add(4*time.Minute)))
	assert.Equal(t, 500*time.Millisecond, p.Next(false, t0.Add(5*time.Minute)), "a spell past FastFor is polled at the usual rate")
	assert.Equal(t, 500*time.Millisecond, p.Next(true, t0.Add(6*time.Minute)))
	assert.Equal(t, 100*time.Millisecond, p.Next(false, t0.Add(7*time.Minute)), "a new spell is fast again")
}

func TestNextWithoutAFasterPauseKeepsTheUsualOne(t *testing.T) {
	p := &Pace{Every: time.Second, Fast: 2 * time.Second, FastFor: time.Hour}
	assert.Equal(t, time.Second, p.Next(false, time.Now()))
	p = &Pace{Every: time.Second}
	assert.Equal(t, time.Second, p.Next(false, time.Now()))
}
