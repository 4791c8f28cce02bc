package parallel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errPart = errors.New("part failed")

func TestInOrderRunsEveryPartOnce(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	err := InOrder(context.Background(), 100, 8, func(i int) error {
		mu.Lock()
		defer mu.Unlock()
		seen[i]++
		return nil
	})
	require.NoError(t, err)
	require.Len(t, seen, 100)
	for i, n := range seen {
		assert.Equal(t, 1, n, "part %d", i)
	}
}

// The error is the first failing part's in order, as a sequential loop gives, whichever
// worker met a failure first, and every part before it ran.
func TestInOrderReturnsTheFirstFailureInOrder(t *testing.T) {
	for _, workers := range []int{1, 2, 8} {
		t.Run(fmt.Sprint(workers), func(t *testing.T) {
			var mu sync.Mutex
			seen := map[int]bool{}
			err := InOrder(context.Background(), 64, workers, func(i int) error {
				mu.Lock()
				seen[i] = true
				mu.Unlock()
				if i == 17 || i == 40 || i == 41 {
					return fmt.Errorf("part %d: %w", i, errPart)
				}
				return nil
			})
			require.ErrorIs(t, err, errPart)
			assert.EqualError(t, err, "part 17: "+errPart.Error())
			for i := range 17 {
				assert.True(t, seen[i], "part %d before the failure did not run", i)
			}
		})
	}
}

func TestInOrderStopsOnACancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	err := InOrder(ctx, 10, 4, func(int) error { calls++; return nil })
	assert.True(t, errors.Is(err, context.Canceled), "got %v", err)
	assert.Zero(t, calls)
}

func TestInOrderWithNothingToDo(t *testing.T) {
	require.NoError(t, InOrder(context.Background(), 0, 4, func(int) error { t.Fatal("called"); return nil }))
}
