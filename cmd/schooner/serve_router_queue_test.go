package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheRoutersQueueFlag(t *testing.T) {
	q, err := routerQueue("heap")
	require.NoError(t, err)
	assert.Nil(t, q, "the router's default")
	q, err = routerQueue("pq")
	require.NoError(t, err)
	require.NotNil(t, q)
	pqueue := q()
	assert.Zero(t, pqueue.Len())
	if c, ok := pqueue.(interface{ Close() }); ok {
		c.Close()
	}
	_, err = routerQueue("fifo")
	assert.ErrorContains(t, err, "want heap or pq")
}
