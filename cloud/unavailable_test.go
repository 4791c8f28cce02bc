package cloud

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

type manualClock struct{ t time.Time }

func (c *manualClock) now() time.Time          { return c.t }
func (c *manualClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestUnavailableExpiresAfterTTL(t *testing.T) {
	clk := &manualClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	u := &Unavailable{TTL: time.Minute, Now: clk.now}
	key := OfferingKey{Capacity: Spot, InstanceType: "p3.2xlarge", Zone: "us-east-1a"}
	assert.False(t, u.IsUnavailable(key))
	u.Mark(key, "ICE")
	assert.True(t, u.IsUnavailable(key))
	assert.False(t, u.IsUnavailable(OfferingKey{Capacity: OnDemand, InstanceType: "p3.2xlarge", Zone: "us-east-1a"}),
		"spot shortage says nothing about on-demand")
	clk.advance(59 * time.Second)
	assert.True(t, u.IsUnavailable(key))
	assert.Len(t, u.Entries(), 1)
	clk.advance(time.Second)
	assert.False(t, u.IsUnavailable(key))
	assert.Empty(t, u.Entries())
}

func TestUnavailableObserveOnlyCapacityErrors(t *testing.T) {
	u := &Unavailable{}
	key := OfferingKey{Capacity: Spot, InstanceType: "g5.xlarge", Zone: "us-west-2a"}
	assert.False(t, u.Observe(key, &Error{Kind: ErrThrottled, Provider: "aws"}))
	assert.False(t, u.Observe(key, errors.New("boom")))
	assert.False(t, u.IsUnavailable(key))

	other := OfferingKey{Capacity: Spot, InstanceType: "g5.xlarge", Zone: "us-west-2b"}
	wrapped := fmt.Errorf("acquiring: %w", &Error{Kind: ErrInsufficientCapacity, Provider: "aws", Offering: &other})
	assert.True(t, u.Observe(key, wrapped))
	assert.True(t, u.IsUnavailable(other), "the offering named by the error wins over the caller's guess")
	assert.False(t, u.IsUnavailable(key))
}

func TestUnavailableFilter(t *testing.T) {
	u := &Unavailable{}
	a := Offering{Zone: "z1", InstanceType: "t"}
	b := Offering{Zone: "z2", InstanceType: "t"}
	u.Mark(a.Key(Spot), "ICE")
	assert.Equal(t, []Offering{b}, u.Filter([]Offering{a, b}, Spot))
	assert.Equal(t, []Offering{a, b}, u.Filter([]Offering{a, b}, OnDemand))
}
