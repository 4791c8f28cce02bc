package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// kept holds the survivors of scatter, so the collector keeps them and their spans.
var kept [][]byte

// scatter allocates n 1 KiB objects, one-page spans of eight, and keeps every eighth: each
// survivor alone in its span, seven eighths of the span free.
//
//go:noinline
func scatter(n int) {
	for i := range n {
		b := make([]byte, 1024)
		if i%8 == 0 {
			kept = append(kept, b)
		}
	}
}

func TestASiteThatLeavesOneObjectASpanIsChargedTheSpansFreeBytes(t *testing.T) {
	rate := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = rate }()
	scatter(8 * 512)
	runtime.GC()

	path := filepath.Join(t.TempDir(), "heap.dump")
	f, err := os.Create(path)
	require.NoError(t, err)
	debug.WriteHeapDump(f.Fd())
	require.NoError(t, f.Close())

	var out bytes.Buffer
	require.NoError(t, run([]string{"-top", "3", path}, &out))
	require.Contains(t, out.String(), "by owner")
	require.Contains(t, out.String(), "spans.scatter", "the report names the site among the top three")

	d, err := readDump(path)
	require.NoError(t, err)
	require.NotZero(t, d.heapInuse)
	classes, err := sizeClasses()
	require.NoError(t, err)
	require.Equal(t, uint64(1), classes[1024], "1 KiB objects: one-page spans")
	a := analyse(d, classes)

	var s *site
	for _, x := range a.sites {
		if strings.HasSuffix(x.key, ".scatter") {
			s = x
		}
	}
	require.NotNil(t, s, "the survivors are attributed to scatter")
	require.GreaterOrEqual(t, s.objects, 512)
	// 512 spans of 8 KiB with 1 KiB live each: 7 KiB free charged per survivor (a survivor
	// may share its page with other live 1 KiB objects, which then share the charge).
	require.Greater(t, s.charged, 0.6*512*7*1024)
	require.Greater(t, s.lonely, 400, "most survivors sit in spans at most a quarter full")
	require.LessOrEqual(t, a.live, a.spanBytes)
	runtime.KeepAlive(kept)
}

func TestObjectsOfOnePageClassesShareASpanOnlyWithinTheirPage(t *testing.T) {
	classes := map[uint64]uint64{1024: 1, 1408: 2}
	objs := []object{
		{addr: 0x10000, size: 1024}, {addr: 0x10400, size: 1024}, // one page
		{addr: 0x12000, size: 1024},                                       // the next page: another span
		{addr: 0x20000, size: 1408}, {addr: 0x20000 + 5*1408, size: 1408}, // a two-page span
		{addr: 0x20000 + 5*1408 + 100, size: 1408}, // off its stride: another span
		{addr: 0x30000, size: 40000},               // a large object
	}
	spans := spansOf(objs, classes)
	require.Len(t, spans, 5)
	require.Equal(t, []int{0, 1}, spans[0].objects)
	require.Equal(t, []int{2}, spans[1].objects)
	require.Equal(t, []int{3, 4}, spans[2].objects)
	require.Equal(t, uint64(2*pageSize), spans[2].bytes)
	require.Equal(t, []int{5}, spans[3].objects)
	require.Equal(t, uint64(5*pageSize), spans[4].bytes)
}

func TestAFileThatIsNotAHeapDumpIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x")
	require.NoError(t, os.WriteFile(path, []byte("not a dump"), 0o644))
	_, err := readDump(path)
	require.ErrorContains(t, err, "is not a Go heap dump")
}

func TestASiteIsOwnedByItsSchoonerPackageOrItsModule(t *testing.T) {
	require.Equal(t, "github.com/schooner-ml/schooner/cloud/sim", owner("github.com/schooner-ml/schooner/cloud/sim.(*instance).snapshot"))
	require.Equal(t, "go.temporal.io/server", owner("go.temporal.io/server/common/cache.(*lru).putInternal"))
	require.Equal(t, "google.golang.org/grpc", owner("google.golang.org/grpc/encoding/proto.(*codecV2).Unmarshal"))
	require.Equal(t, "context", owner("context.WithValue"))
	require.Equal(t, "regexp", owner("regexp.(*Regexp).ReplaceAllString"))
}

func TestRunWantsOneHeapDump(t *testing.T) {
	var out bytes.Buffer
	require.ErrorContains(t, run(nil, &out), "one heap dump to read")
	require.Contains(t, out.String(), "usage:")
}
