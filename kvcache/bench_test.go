package kvcache

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// BenchmarkPutStep streams decode steps of 1 MiB, the size measured on the H200 machine (8
// sequences × 32 layers × 8 KV heads × 128 × bf16): one frame per step, acks asynchronous.
func BenchmarkPutStep(b *testing.B) {
	lay := Layout{DType: "bf16", KVHeads: 8, HeadDim: 128}
	layers := [2]int{0, 32}
	const batch, window = 8, 512
	for _, transport := range []string{"tcp", "unix"} {
		b.Run(transport, func(b *testing.B) {
			_, tcp, unix := holderAt(b, Options{Budget: 2 * window << 20})
			addr := map[string]string{"tcp": tcp, "unix": unix}[transport]
			w := dial(b, addr, RoleWriter, "bench", 0)
			reqs := make([]string, batch)
			entries := make([]Entry, batch)
			for i := range reqs {
				reqs[i] = fmt.Sprintf("r%d", i)
			}
			data := make([]byte, batch*32*lay.tokenBytes())
			require.Equal(b, 1<<20, len(data))
			var failed atomic.Int64
			onAck := func(a Ack) {
				if a.Err != nil {
					failed.Add(1)
				}
			}
			// restart drops the batch and puts empty prompts, keeping the holder within budget.
			restart := func() {
				require.NoError(b, w.Sync(ctxT(b)))
				for _, r := range reqs {
					_, err := w.Drop(ctxT(b), r)
					require.NoError(b, err)
					require.NoError(b, w.Put(Put{Request: r, Layer: 0, Layout: lay, Last: true, Layers: layers}, onAck))
				}
			}
			restart()
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			k := 0
			for i := range b.N {
				if i > 0 && i%window == 0 {
					restart()
					k = 0
				}
				k++
				for j := range entries {
					entries[j] = Entry{Request: reqs[j], Token: k - 1}
				}
				if err := w.PutStep(Step{Step: k, Entries: entries, Layers: layers, Layout: lay, Data: data}, onAck); err != nil {
					b.Fatal(err)
				}
			}
			require.NoError(b, w.Sync(ctxT(b)))
			b.StopTimer()
			require.Zero(b, failed.Load(), "refused acks")
		})
	}
}

func TestTheCollectorReportsTheHolder(t *testing.T) {
	h, addr, _ := holderAt(t, Options{Budget: 1 << 20})
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(h.Collector()))
	w := dial(t, addr, RoleWriter, "d", 0)
	putPrompt(t, w, "r", [2]int{0, 2}, 4, testLayout)
	writeSteps(t, w, []string{"r"}, [2]int{0, 2}, 4, 1, 3, testLayout)
	_, err := w.Get(ctxT(t), "r", nil)
	require.NoError(t, err)
	want := fmt.Sprintf(`
# HELP schooner_kvcache_held_bytes Bytes of KV cache the holder keeps.
# TYPE schooner_kvcache_held_bytes gauge
schooner_kvcache_held_bytes %d
# HELP schooner_kvcache_acks_total Acks sent: (request, step) pairs stored.
# TYPE schooner_kvcache_acks_total counter
schooner_kvcache_acks_total 7
# HELP schooner_kvcache_gets_total Replicas read back (restores).
# TYPE schooner_kvcache_gets_total counter
schooner_kvcache_gets_total 1
`, 7*2*testLayout.tokenBytes())
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"schooner_kvcache_held_bytes", "schooner_kvcache_acks_total", "schooner_kvcache_gets_total"))
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	assert.Equal(t, 15, n, "13 series and the two of gets held for a writer")
}
