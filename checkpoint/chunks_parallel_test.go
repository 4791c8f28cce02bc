package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func chunked(n int) ShardMeta {
	m := ShardMeta{}
	for i := range n {
		m.Chunks = append(m.Chunks, ChunkMeta{Offset: int64(i) * 10, Length: 10})
	}
	return m
}

func TestForEachChunkVisitsEveryChunkOnce(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	err := forEachChunk(context.Background(), chunked(100), 8, func(i int, c ChunkMeta) error {
		mu.Lock()
		defer mu.Unlock()
		seen[i]++
		assert.Equal(t, int64(i)*10, c.Offset)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, seen, 100)
	for i, n := range seen {
		assert.Equal(t, 1, n, "chunk %d", i)
	}
}

// The error is the first failing chunk's in order, as the sequential loop gave, whichever
// worker met a failure first, and every chunk before it was checked.
func TestForEachChunkReturnsTheFirstFailureInOrder(t *testing.T) {
	for _, workers := range []int{1, 2, 8} {
		t.Run(fmt.Sprint(workers), func(t *testing.T) {
			var mu sync.Mutex
			seen := map[int]bool{}
			err := forEachChunk(context.Background(), chunked(64), workers, func(i int, _ ChunkMeta) error {
				mu.Lock()
				seen[i] = true
				mu.Unlock()
				if i == 17 || i == 40 || i == 41 {
					return fmt.Errorf("chunk %d: %w", i, ErrCorrupt)
				}
				return nil
			})
			require.ErrorIs(t, err, ErrCorrupt)
			assert.EqualError(t, err, "chunk 17: "+ErrCorrupt.Error())
			for i := range 17 {
				assert.True(t, seen[i], "chunk %d before the failure was not checked", i)
			}
		})
	}
}

func TestForEachChunkStopsOnACancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	err := forEachChunk(ctx, chunked(10), 4, func(int, ChunkMeta) error { calls++; return nil })
	assert.True(t, errors.Is(err, context.Canceled), "got %v", err)
	assert.Zero(t, calls)
}
