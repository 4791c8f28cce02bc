package main

import (
	"encoding/csv"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// queueDelay is the wait OnDispatch reported for a completed request: that of its last submit,
// the one the worker took (earlier ones were pushed back as overloaded), and how many submits
// it took; ok is false when the hook never reported it.
func (t trial) queueDelay(r result) (d time.Duration, submits int, ok bool) {
	q := t.Queued[r.ID]
	if len(q) == 0 {
		return 0, 0, false
	}
	return q[len(q)-1], len(q), true
}

// brief is one line per trial: printed as the run goes on and kept in the summary, since the
// client's send lag says which trials the host disturbed.
func (t trial) brief() string {
	var qd, lag []time.Duration
	ok, rejected := 0, 0
	for _, r := range t.Results {
		lag = append(lag, r.SendLag)
		switch {
		case r.Status == http.StatusTooManyRequests:
			rejected++
		case r.Err == "":
			ok++
			if d, _, seen := t.queueDelay(r); seen {
				qd = append(qd, d)
			}
		}
	}
	slices.Sort(qd)
	slices.Sort(lag)
	return fmt.Sprintf("%d requests, %d completed, %d got 429; queueing delay ms p50 %s p99 %s max %s; peak waiting %d; client send lag ms p99 %s max %s",
		len(t.Results), ok, rejected, ms(pct(qd, 50)), ms(pct(qd, 99)), ms(pct(qd, 100)), t.PeakWaiting, ms(pct(lag, 99)), ms(pct(lag, 100)))
}

// summary is one queue over every repeat.
type summary struct {
	Queue                         string
	Requests, Completed, Rejected int
	Failed                        int // neither completed nor 429
	Unobserved                    int // completed without an OnDispatch report
	Queued, E2E, SendLag          []time.Duration
	P99ByRepeat                   []time.Duration
	PeakWaiting                   int
	Overloads                     int
	Pauses                        uint64
}

// summarize pools each queue's trials, in queueNames order.
func summarize(trials []trial) []summary {
	var out []summary
	for _, name := range queueNames {
		s := summary{Queue: name}
		for _, t := range trials {
			if t.Queue != name {
				continue
			}
			var rep []time.Duration
			for _, r := range t.Results {
				s.Requests++
				s.SendLag = append(s.SendLag, r.SendLag)
				switch {
				case r.Status == http.StatusTooManyRequests:
					s.Rejected++
				case r.Err != "":
					s.Failed++
				default:
					s.Completed++
					s.E2E = append(s.E2E, r.E2E)
					if d, _, ok := t.queueDelay(r); ok {
						s.Queued = append(s.Queued, d)
						rep = append(rep, d)
					} else {
						s.Unobserved++
					}
				}
			}
			slices.Sort(rep)
			s.P99ByRepeat = append(s.P99ByRepeat, pct(rep, 99))
			s.PeakWaiting = max(s.PeakWaiting, t.PeakWaiting)
			s.Overloads += t.Overloads
			s.Pauses += t.Counters.Pauses
		}
		if s.Requests == 0 {
			continue
		}
		for _, d := range [][]time.Duration{s.Queued, s.E2E, s.SendLag} {
			slices.Sort(d)
		}
		out = append(out, s)
	}
	return out
}

// pct is the p-th percentile (nearest rank) of sorted d; 100 is the maximum.
func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(float64(len(d))*p/100+0.999999) - 1
	return d[min(max(i, 0), len(d)-1)]
}

// ms prints a duration in milliseconds with microsecond resolution.
func ms(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/1e6) }

// markdown is the table: one row per queue, then pq / heap.
func markdown(sums []summary) string {
	var b strings.Builder
	b.WriteString("| queue | requests | completed | 429 | failed | queueing p50 ms | p90 ms | p99 ms | max ms | p99 by repeat ms | end-to-end p50 ms | p99 ms | peak waiting |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range sums {
		reps := make([]string, len(s.P99ByRepeat))
		for i, d := range s.P99ByRepeat {
			reps[i] = ms(d)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %d |\n", s.Queue, s.Requests, s.Completed,
			s.Rejected, s.Failed, ms(pct(s.Queued, 50)), ms(pct(s.Queued, 90)), ms(pct(s.Queued, 99)), ms(pct(s.Queued, 100)),
			strings.Join(reps, ", "), ms(pct(s.E2E, 50)), ms(pct(s.E2E, 99)), s.PeakWaiting)
	}
	if len(sums) == 2 {
		h, p := sums[0], sums[1]
		ratio := func(pc float64, a, b []time.Duration) string {
			if pct(a, pc) <= 0 {
				return "–"
			}
			return fmt.Sprintf("%.2f", float64(pct(b, pc))/float64(pct(a, pc)))
		}
		reps := make([]string, min(len(h.P99ByRepeat), len(p.P99ByRepeat)))
		for i := range reps {
			reps[i] = "–"
			if h.P99ByRepeat[i] > 0 {
				reps[i] = fmt.Sprintf("%.2f", float64(p.P99ByRepeat[i])/float64(h.P99ByRepeat[i]))
			}
		}
		fmt.Fprintf(&b, "| %s / %s | | | | | %s | %s | %s | %s | %s | %s | %s | |\n", p.Queue, h.Queue,
			ratio(50, h.Queued, p.Queued), ratio(90, h.Queued, p.Queued), ratio(99, h.Queued, p.Queued), ratio(100, h.Queued, p.Queued),
			strings.Join(reps, ", "), ratio(50, h.E2E, p.E2E), ratio(99, h.E2E, p.E2E))
	}
	return b.String()
}

// notes are the checks under the table: the load generator's own lateness, and anything that
// is not plain queueing (pushed-back submits, paused requests, missing reports).
func notes(sums []summary, trials []trial) string {
	var b strings.Builder
	for _, s := range sums {
		// The requests that found a slot free (under 1 ms: nothing ahead of them) show the
		// dispatch path's own cost, the queue's Push and Pop included, without the backlog.
		i, _ := slices.BinarySearch(s.Queued, time.Millisecond)
		fmt.Fprintf(&b, "%s: %d requests found a slot free (waited < 1 ms): their queueing delay p50 %.1f µs, p90 %.1f µs\n",
			s.Queue, i, float64(pct(s.Queued[:i], 50))/1e3, float64(pct(s.Queued[:i], 90))/1e3)
	}
	for _, s := range sums {
		fmt.Fprintf(&b, "%s: client send lag p99 %s ms, max %s ms; worker overloads %d; pauses %d; completed without a dispatch report %d\n",
			s.Queue, ms(pct(s.SendLag, 99)), ms(pct(s.SendLag, 100)), s.Overloads, s.Pauses, s.Unobserved)
	}
	errs := map[string]int{}
	for _, t := range trials {
		for _, r := range t.Results {
			if r.Err != "" && r.Status != http.StatusTooManyRequests {
				errs[t.Queue+": "+r.Err]++
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(errs)) {
		fmt.Fprintf(&b, "failed: %s (×%d)\n", k, errs[k])
	}
	return b.String()
}

// save writes raw.csv, one row per request of every trial, and summary.md, what was printed.
func save(dir, name string, trials []trial, report string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.Create(filepath.Join(dir, "raw.csv"))
	if err != nil {
		return fmt.Errorf("creating raw.csv: %w", err)
	}
	cw := csv.NewWriter(f)
	_ = cw.Write([]string{"machine", "queue", "repeat", "request", "scheduled_us", "send_lag_us", "status", "queue_delay_us",
		"submits", "e2e_us", "tokens", "error"})
	us := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) }
	for _, t := range trials {
		for _, r := range t.Results {
			qd := ""
			d, submits, ok := t.queueDelay(r)
			if ok {
				qd = us(d)
			}
			_ = cw.Write([]string{name, t.Queue, strconv.Itoa(t.Repeat), strconv.Itoa(r.Index), us(r.Scheduled), us(r.SendLag),
				strconv.Itoa(r.Status), qd, strconv.Itoa(submits), us(r.E2E), strconv.Itoa(r.Tokens), r.Err})
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		f.Close()
		return fmt.Errorf("writing raw.csv: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing raw.csv: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.md"), []byte(report), 0o644); err != nil {
		return fmt.Errorf("writing summary.md: %w", err)
	}
	return nil
}
