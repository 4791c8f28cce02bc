package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint/store"
)

func TestFakeContract(t *testing.T) {
	t.Parallel()
	testContract(t, store.NewFake())
}

func TestFakeRecordsAndFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := store.NewFake()
	boom := errors.New("boom")
	f.FailNext(store.OpPut, boom)
	f.FailNext(store.OpPut, boom)
	f.FailNext(store.OpGet, boom)

	data := []byte("payload")
	for range 2 {
		assert.ErrorIs(t, f.Put(ctx, "k", nil, 0, 0), boom)
	}
	put(t, f, "k", data)
	_, err := f.Get(ctx, "k")
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, data, get(t, f, "k"))
	require.NoError(t, f.Delete(ctx, "k", "j"))

	calls := f.Calls()
	require.Len(t, calls, 6)
	assert.Equal(t, store.Call{Op: store.OpPut, Key: "k", Err: boom}, calls[0])
	assert.Equal(t, store.Call{Op: store.OpPut, Key: "k", Size: int64(len(data))}, calls[2])
	assert.Equal(t, store.OpGet, calls[3].Op)
	assert.ErrorIs(t, calls[3].Err, boom)
	assert.Equal(t, []string{"k", "j"}, calls[5].Keys)

	f.Set("raw", []byte{1, 2})
	b, ok := f.Data("raw")
	assert.True(t, ok)
	assert.Equal(t, []byte{1, 2}, b)

	f.FailNext(store.OpList, boom)
	f.Reset()
	assert.Empty(t, f.Calls())
	infos, err := f.List(ctx, "")
	require.NoError(t, err, "Reset drops pending failures")
	assert.Empty(t, infos)

	hooked := store.NewFake()
	hooked.Hook = func(op store.Op, key string) error {
		if op == store.OpDelete {
			return boom
		}
		return nil
	}
	assert.ErrorIs(t, hooked.Delete(ctx, "x"), boom)
	_, err = hooked.List(ctx, "")
	assert.NoError(t, err)
}
