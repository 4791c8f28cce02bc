package gceapi

import "testing"

func TestParseFilter(t *testing.T) {
	item := map[string]string{"labels.schooner-job": "job-a", "status": "RUNNING", "name": "gcp-000001",
		"operationType": "compute.instances.preempted"}
	get := func(p string) (string, bool) { v, ok := item[p]; return v, ok }
	cases := []struct {
		filter string
		want   bool
	}{
		{``, true},
		{`labels.schooner-job = "job-a"`, true},
		{`labels.schooner-job="job-b"`, false},
		{`labels.schooner-job = "job-a" AND status != TERMINATED`, true},
		{`(labels.schooner-job = "job-a") (status = "TERMINATED")`, false},
		{`operationType="compute.instances.preempted"`, true},
		{`name = gcp-*`, true},
		{`name = "gcp-*"`, false},
		{`labels.missing != "x"`, true},
		{`labels.missing = "x"`, false},
		{`name = "say \"hi\""`, false},
	}
	for _, c := range cases {
		f, err := parseFilter(c.filter)
		if err != nil {
			t.Errorf("%q: %v", c.filter, err)
			continue
		}
		if got := f.match(get); got != c.want {
			t.Errorf("%q: got %v, want %v", c.filter, got, c.want)
		}
	}
	for _, bad := range []string{`a = "x" OR b = "y"`, `NOT a = "x"`, `a : "x"`, `a =`, `a = "unterminated`, `! = x`} {
		if _, err := parseFilter(bad); err == nil {
			t.Errorf("%q should not parse", bad)
		}
	}
}
