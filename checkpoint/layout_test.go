package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint/store"
)

// straddleChunk is the chunk size of the straddle tests: above directPiece, so a chunk's
// pieces of a large tensor are read in place and those of small ones through scratch.
const straddleChunk = 320 << 10

// straddleShard is rank's shard of step with tensors cut so that, in straddleChunk chunks,
// large and small tensors cross chunk boundaries (t7 spans three chunks), chunks hold several
// tensors, and unselected tensors sit between selected ones.
func straddleShard(step int64, rank int) Shard {
	sizes := []int{1_001, 300_003, 70_001, 5, 200_000, 65_536, 131_071, 700_001}
	s := Shard{Rank: rank}
	for i, n := range sizes {
		s.Tensors = append(s.Tensors, Tensor{Name: fmt.Sprintf("r%d.t%d", rank, i), Layer: rank, DType: Uint8,
			Shape: []int64{int64(n)}, Data: patternBytes(step*1000+int64(rank*10+i), n)})
	}
	return s
}

var plan2 = PlanInfo{World: 2, PP: 2, DP: 1, TP: 1}

// straddleSources saves steps 1 and 2 of straddleShard for two ranks to a local root and to a
// remote tier, and returns both sources with a way to flip a byte of a rank's data of a step.
func straddleSources(t *testing.T) map[string]struct {
	src  Source
	flip func(t *testing.T, step int64, rank int, off int64)
} {
	root := t.TempDir()
	engines := make([]*Engine, 2)
	for r := range engines {
		opts := smallOptions(RankDir(root, r), zerolog.Nop())
		opts.Rank, opts.KeepCommitted, opts.ChunkSize = r, 3, straddleChunk
		engines[r] = openEngine(t, opts)
	}
	fake := store.NewFake()
	remote := &Remote{Store: fake}
	for step := int64(1); step <= 2; step++ {
		for r, e := range engines {
			saveWait(t, e, step, straddleShard(step, r), plan2)
			meta, data, err := EncodeShard(step, straddleShard(step, r), plan2, nil, straddleChunk)
			require.NoError(t, err)
			_, err = remote.PutShard(context.Background(), meta, bytes.NewReader(data))
			require.NoError(t, err)
		}
	}
	return map[string]struct {
		src  Source
		flip func(t *testing.T, step int64, rank int, off int64)
	}{
		"local": {LocalRoot(root, zerolog.Nop()), func(t *testing.T, step int64, rank int, off int64) {
			flipByte(t, slotOf(t, engines[rank], step), off)
		}},
		"remote": {remote, func(t *testing.T, step int64, rank int, off int64) {
			b, ok := fake.Data(remoteDataKey(step, rank))
			require.True(t, ok)
			b[off] ^= 0x01
			fake.Set(remoteDataKey(step, rank), b)
		}},
	}
}

// placeInto lays names out in one buffer with a 64-byte gap of 0xAA after each, so a write
// outside a tensor's place shows.
func placeInto(t *testing.T, l *Layout, names []string) ([]byte, map[string][]byte) {
	t.Helper()
	var size int64
	offs := make([]int64, len(names))
	for i, n := range names {
		tm, ok := l.Tensor(n)
		require.True(t, ok, n)
		offs[i] = size
		size += tm.Length + 64
	}
	buf := bytes.Repeat([]byte{0xAA}, int(size))
	dst := make(map[string][]byte, len(names))
	for i, n := range names {
		tm, _ := l.Tensor(n)
		dst[n] = buf[offs[i] : offs[i]+tm.Length : offs[i]+tm.Length]
	}
	return buf, dst
}

func TestLayoutReadIntoPlacesTensorsThatStraddleChunks(t *testing.T) {
	for name, s := range straddleSources(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			l, err := LayoutStep(ctx, s.src, 2)
			require.NoError(t, err)
			assert.Len(t, l.Snapshot.Shards, 2)
			assert.Nil(t, l.Snapshot.Tensors["r0.t1"].Data, "a layout holds no data")
			names := []string{"r1.t6", "r0.t1", "r0.t2", "r0.t3", "r1.t0", "r1.t4", "r0.t7"}
			buf, dst := placeInto(t, l, names)
			require.NoError(t, l.ReadInto(ctx, s.src, dst))

			want := map[string][]byte{}
			for r := range 2 {
				for _, tn := range straddleShard(2, r).Tensors {
					want[tn.Name] = tn.Data
				}
			}
			var at int
			for _, n := range names {
				got := buf[at : at+len(want[n])]
				require.True(t, bytes.Equal(want[n], got), "bytes of %s differ", n)
				at += len(want[n])
				require.Equal(t, bytes.Repeat([]byte{0xAA}, 64), buf[at:at+64], "the gap after %s was written", n)
				at += 64
			}
		})
	}
}

func TestLayoutReadIntoReportsTheFirstCorruptChunk(t *testing.T) {
	for name, s := range straddleSources(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			// Rank 1's data is 1,467,618 bytes in 5 chunks: corrupt chunks 4, then 1.
			s.flip(t, 2, 1, 4*straddleChunk+17)
			s.flip(t, 2, 1, 1*straddleChunk+5)
			l, err := LayoutStep(ctx, s.src, 2)
			require.NoError(t, err, "metadata is intact")
			_, dst := placeInto(t, l, []string{"r1.t1", "r1.t4"})
			err = l.ReadInto(ctx, s.src, dst)
			require.ErrorIs(t, err, ErrCorrupt)
			assert.Contains(t, err.Error(), "rank 1 chunk 1 ")
		})
	}
}

func TestLayoutReadIntoVerifiesWhatItDoesNotPlace(t *testing.T) {
	for name, s := range straddleSources(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s.flip(t, 2, 1, 100) // in r1.t0, which rank 0's restore does not want
			l, err := LayoutStep(ctx, s.src, 2)
			require.NoError(t, err)
			_, dst := placeInto(t, l, []string{"r0.t1"})
			require.ErrorIs(t, l.ReadInto(ctx, s.src, dst), ErrCorrupt, "every rank resumes from the same step")

			var got int64
			require.NoError(t, TryDurable(ctx, s.src, -1, zerolog.Nop(), func(step int64) error {
				l, err := LayoutStep(ctx, s.src, step)
				if err != nil {
					return err
				}
				got = step
				_, dst := placeInto(t, l, []string{"r0.t1"})
				return l.ReadInto(ctx, s.src, dst)
			}))
			assert.Equal(t, int64(1), got, "falls back past the corrupt step")
		})
	}
}

func TestLayoutReadIntoHonoursCancellation(t *testing.T) {
	for name, s := range straddleSources(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			l, err := LayoutStep(ctx, s.src, 2)
			require.NoError(t, err)
			_, dst := placeInto(t, l, []string{"r0.t1"})
			cancel()
			require.ErrorIs(t, l.ReadInto(ctx, s.src, dst), context.Canceled)
		})
	}
}

func TestLayoutReadIntoRefusesADuplicateThatDiffers(t *testing.T) {
	ctx := context.Background()
	remote := &Remote{Store: store.NewFake()}
	shared := func(rank int, seed int64) Shard {
		return Shard{Rank: rank, Tensors: []Tensor{
			{Name: fmt.Sprintf("own%d", rank), Layer: 0, DType: Uint8, Shape: []int64{10}, Data: patternBytes(int64(rank), 10)},
			{Name: "shared", Layer: NoLayer, DType: Uint8, Shape: []int64{100}, Data: patternBytes(seed, 100)},
		}}
	}
	put := func(step int64, s Shard) {
		meta, data, err := EncodeShard(step, s, plan2, nil, 64)
		require.NoError(t, err)
		_, err = remote.PutShard(ctx, meta, bytes.NewReader(data))
		require.NoError(t, err)
	}
	put(1, shared(0, 7))
	put(1, shared(1, 7))
	put(2, shared(0, 7))
	put(2, shared(1, 8))

	for _, want := range [][]string{{"shared"}, {"own0"}} {
		l, err := LayoutStep(ctx, remote, 1)
		require.NoError(t, err)
		_, dst := placeInto(t, l, want)
		require.NoError(t, l.ReadInto(ctx, remote, dst), "identical copies of %v", want)

		l, err = LayoutStep(ctx, remote, 2)
		require.NoError(t, err)
		_, dst = placeInto(t, l, want)
		err = l.ReadInto(ctx, remote, dst)
		require.Error(t, err, "copies differ, selected or not (%v)", want)
		assert.Contains(t, err.Error(), "tensor shared differs between rank 0 and rank 1")
	}
}

// countingSource counts each rank's ReadShardInto calls.
type countingSource struct {
	Source
	reads map[int]int
}

func (c countingSource) ReadShardInto(ctx context.Context, m ShardMeta, dst [][]byte) error {
	c.reads[m.Rank]++
	return c.Source.ReadShardInto(ctx, m, dst)
}

// TestLayoutReadIntoRereadsAnOwnerOnceForItsUnwantedDuplicates: names two ranks hold are
// compared byte for byte; when the restore wants none of them, their first copies come from
// one more read of the owning rank's shard, not one read per name (a shard is a whole step of
// a stage, so a read per name would multiply a restore's time by the names).
func TestLayoutReadIntoRereadsAnOwnerOnceForItsUnwantedDuplicates(t *testing.T) {
	ctx := context.Background()
	remote := &Remote{Store: store.NewFake()}
	for rank := range 2 {
		s := Shard{Rank: rank, Tensors: []Tensor{{Name: fmt.Sprintf("own%d", rank), Layer: 0, DType: Uint8, Shape: []int64{10}, Data: patternBytes(int64(rank), 10)}}}
		for i := range 3 {
			s.Tensors = append(s.Tensors, Tensor{Name: fmt.Sprintf("shared%d", i), Layer: NoLayer, DType: Uint8, Shape: []int64{100}, Data: patternBytes(int64(40+i), 100)})
		}
		meta, data, err := EncodeShard(1, s, plan2, nil, 64)
		require.NoError(t, err)
		_, err = remote.PutShard(ctx, meta, bytes.NewReader(data))
		require.NoError(t, err)
	}
	src := countingSource{Source: remote, reads: map[int]int{}}
	l, err := LayoutStep(ctx, src, 1)
	require.NoError(t, err)
	_, dst := placeInto(t, l, []string{"own1"})
	require.NoError(t, l.ReadInto(ctx, src, dst))
	assert.Equal(t, map[int]int{0: 2, 1: 1}, src.reads, "rank 0 read once for the step and once for its three copies")
}
