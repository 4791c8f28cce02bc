package pq

import (
	"strings"
	"testing"
)

// TestCheckerCatchesViolations feeds the checker histories that break each rule, so a
// passing concurrency test means something.
func TestCheckerCatchesViolations(t *testing.T) {
	ins := func(id, key int, s, e int64) event { return event{insert: true, id: id, key: key, start: s, end: e} }
	del := func(id, key int, s, e int64) event { return event{ok: true, id: id, key: key, start: s, end: e} }
	empty := func(s, e int64) event { return event{start: s, end: e} }
	cases := []struct {
		name   string
		h      []event
		strict bool
		want   string
	}{
		{"lost", []event{ins(1, 5, 1, 2)}, false, "lost"},
		{"duplicate", []event{ins(1, 5, 1, 2), del(1, 5, 3, 4), del(1, 5, 5, 6)}, false, "twice"},
		{"invented", []event{del(7, 5, 3, 4)}, false, "never inserted"},
		{"from the future", []event{del(1, 5, 1, 2), ins(1, 5, 3, 4)}, false, "before its insert"},
		{"false empty", []event{ins(1, 5, 1, 2), empty(3, 4), del(1, 5, 5, 6)}, false, "reported empty"},
		{"not the minimum", []event{ins(1, 1, 1, 2), ins(2, 9, 3, 4), del(2, 9, 5, 6), del(1, 1, 7, 8)}, true, "smaller items"},
	}
	for _, c := range cases {
		res := checkHistory(c.h, c.strict)
		if len(res.errs) == 0 || !strings.Contains(strings.Join(res.errs, "\n"), c.want) {
			t.Errorf("%s: want an error containing %q, got %q", c.name, c.want, res.errs)
		}
	}
	// Overlapping calls are not violations: the smaller item's insert was still running.
	ok := []event{ins(2, 9, 1, 2), ins(1, 1, 3, 6), del(2, 9, 4, 5), del(1, 1, 7, 8)}
	if res := checkHistory(ok, true); len(res.errs) > 0 {
		t.Errorf("a legal concurrent history was rejected: %q", res.errs)
	}
}
