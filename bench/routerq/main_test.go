package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunServesEveryRequestWithBothQueues runs a second of light bursts through each queue:
// every request must complete through the router with a queueing delay reported for it, and
// the CSV and the summary must be written. Nothing is timed.
func TestRunServesEveryRequestWithBothQueues(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	err := run([]string{"-duration", "1s", "-repeats", "1", "-warmup", "200ms", "-clients", "8", "-burst", "2", "-quiet", "0.2",
		"-on", "100ms", "-off", "200ms", "-max-queue", "100000", "-machine", "test", "-out", dir}, &out)
	require.NoError(t, err, out.String())

	f, err := os.Open(filepath.Join(dir, "raw.csv"))
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.NotEmpty(t, rows)
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	perQueue := map[string]int{}
	for _, r := range rows[1:] {
		q := r[col["queue"]]
		perQueue[q]++
		assert.Equal(t, "200", r[col["status"]], "%s request %s: %s", q, r[col["request"]], r[col["error"]])
		assert.NotEmpty(t, r[col["queue_delay_us"]], "%s request %s has no queueing delay", q, r[col["request"]])
		assert.Equal(t, "16", r[col["tokens"]])
	}
	require.Len(t, perQueue, 2, "both queues ran")
	assert.Positive(t, perQueue["heap"])
	assert.Equal(t, perQueue["heap"], perQueue["pq"], "the same schedule for both")

	summary, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	require.NoError(t, err)
	for _, want := range []string{"| heap |", "| pq |", "| pq / heap |", "GOMAXPROCS"} {
		assert.Contains(t, string(summary), want)
	}
	assert.True(t, strings.Contains(out.String(), "| pq / heap |"), out.String())
}

// The schedule is a function of its seed, and its bursts are denser than its quiet.
func TestScheduleIsSeededAndBursty(t *testing.T) {
	l := load{Capacity: 1000, Burst: 4, Quiet: 0.1, On: 100 * time.Millisecond, Off: 400 * time.Millisecond}
	a, b := l.schedule(7, 5*time.Second), l.schedule(7, 5*time.Second)
	require.Equal(t, a, b)
	assert.NotEqual(t, a, l.schedule(8, 5*time.Second))
	inBurst := 0
	for i, at := range a {
		if i > 0 {
			require.GreaterOrEqual(t, at, a[i-1], "sorted")
		}
		if at%(500*time.Millisecond) < 100*time.Millisecond {
			inBurst++
		}
	}
	// Expected 4000/s × 0.1 s × 10 bursts = 4000 in bursts, 100/s × 0.4 s × 10 = 400 between.
	assert.Greater(t, inBurst, 5*(len(a)-inBurst), "bursts hold most arrivals: %d of %d", inBurst, len(a))
}

func TestPercentile(t *testing.T) {
	d := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	assert.Equal(t, time.Duration(5), pct(d, 50))
	assert.Equal(t, time.Duration(10), pct(d, 99))
	assert.Equal(t, time.Duration(10), pct(d, 100))
	assert.Equal(t, time.Duration(1), pct(d, 1))
	assert.Zero(t, pct(nil, 99))
}
