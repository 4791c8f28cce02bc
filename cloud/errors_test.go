package cloud

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestErrorKindsWithIsAndAs(t *testing.T) {
	key := OfferingKey{Capacity: Spot, InstanceType: "p4d.24xlarge", Zone: "us-east-1a"}
	err := fmt.Errorf("acquiring p4d.24xlarge in us-east-1a: %w",
		&Error{Kind: ErrInsufficientCapacity, Provider: "aws", Code: "InsufficientInstanceCapacity", Message: "no capacity", Offering: &key})
	assert.True(t, IsInsufficientCapacity(err))
	assert.True(t, ShouldTryElsewhere(err))
	assert.False(t, Retryable(err))
	assert.False(t, IsQuota(err))
	e, ok := AsError(err)
	assert.True(t, ok)
	assert.Equal(t, "InsufficientInstanceCapacity", e.Code)
	assert.Contains(t, err.Error(), "spot/p4d.24xlarge/us-east-1a")
	assert.Contains(t, err.Error(), "InsufficientInstanceCapacity")

	for kind, check := range map[error]func(error) bool{
		ErrQuota: IsQuota, ErrThrottled: IsThrottled, ErrNotFound: IsNotFound, ErrInvalidRequest: IsInvalidRequest,
	} {
		err := &Error{Kind: kind, Provider: "gcp"}
		assert.True(t, check(err), "%v", kind)
		assert.False(t, IsInsufficientCapacity(err), "%v", kind)
	}
	assert.True(t, Retryable(&Error{Kind: ErrThrottled}))
	_, ok = AsError(errors.New("plain"))
	assert.False(t, ok)
}
