package store_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint/store"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// randomBytes is n reproducible pseudo-random bytes.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

func put(t *testing.T, s store.Store, key string, data []byte) {
	t.Helper()
	require.NoError(t, s.Put(context.Background(), key, bytes.NewReader(data), int64(len(data)), crcOf(data)))
}

func get(t *testing.T, s store.Store, key string) []byte {
	t.Helper()
	rc, err := s.Get(context.Background(), key)
	require.NoError(t, err)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return b
}

func keys(infos []store.ObjectInfo) []string {
	out := make([]string, len(infos))
	for i, o := range infos {
		out[i] = o.Key
	}
	return out
}

// testContract checks what every Store promises.
func testContract(t *testing.T, s store.Store) {
	ctx := context.Background()

	small := []byte("hello, checkpoint")
	put(t, s, "step-000000000001/rank-00000.meta", small)
	assert.Equal(t, small, get(t, s, "step-000000000001/rank-00000.meta"))

	empty := []byte{}
	put(t, s, "step-000000000001/COMMIT", empty)
	assert.Empty(t, get(t, s, "step-000000000001/COMMIT"))

	// Overwrite replaces.
	put(t, s, "step-000000000001/rank-00000.meta", []byte("v2"))
	assert.Equal(t, []byte("v2"), get(t, s, "step-000000000001/rank-00000.meta"))

	_, err := s.Get(ctx, "step-000000000009/nothing")
	assert.ErrorIs(t, err, store.ErrNotFound)

	bad := []byte("bytes that do not match")
	err = s.Put(ctx, "step-000000000001/bad", bytes.NewReader(bad), int64(len(bad)), crcOf(bad)^1)
	require.ErrorIs(t, err, store.ErrChecksum)
	_, err = s.Get(ctx, "step-000000000001/bad")
	assert.ErrorIs(t, err, store.ErrNotFound, "a rejected put leaves nothing behind")

	for i := range 3 {
		put(t, s, fmt.Sprintf("step-000000000002/rank-%05d.data", i), randomBytes(uint64(i), 100+i))
	}
	infos, err := s.List(ctx, "step-000000000002/")
	require.NoError(t, err)
	assert.Equal(t, []string{"step-000000000002/rank-00000.data", "step-000000000002/rank-00001.data", "step-000000000002/rank-00002.data"}, keys(infos))
	assert.Equal(t, int64(101), infos[1].Size)
	assert.False(t, infos[1].Modified.IsZero())

	all, err := s.List(ctx, "")
	require.NoError(t, err)
	assert.Len(t, all, 5)
	some, err := s.List(ctx, "step-00000000000")
	require.NoError(t, err)
	assert.Len(t, some, 5, "prefixes need not end at a slash")

	require.NoError(t, s.Delete(ctx, "step-000000000002/rank-00000.data", "step-000000000002/rank-00001.data", "step-000000000002/missing"))
	infos, err = s.List(ctx, "step-000000000002/")
	require.NoError(t, err)
	assert.Equal(t, []string{"step-000000000002/rank-00002.data"}, keys(infos))
	require.NoError(t, s.Delete(ctx))

	for _, k := range []string{"", "/abs", "a//b", "a/../b", "dir/"} {
		assert.Error(t, s.Put(ctx, k, bytes.NewReader(nil), 0, 0), "key %q", k)
	}
	assert.NotEmpty(t, s.String())
}
