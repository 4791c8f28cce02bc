package training

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAFallbackWithoutADeadlineIsSaidToNeverFallBack(t *testing.T) {
	s := Spec{Spot: SpotWithFallback}
	if assert.Len(t, s.Advisories(), 1) {
		assert.Contains(t, s.Advisories()[0], "without a deadline buys no on-demand capacity")
	}
	s.Deadline = "24h"
	assert.Empty(t, s.Advisories(), "with a deadline the fallback has something to keep")
	assert.Empty(t, Spec{Spot: SpotOnly}.Advisories())
	assert.Empty(t, Spec{Spot: OnDemandOnly}.Advisories())
}
