package dataset

import (
	"bytes"
	"testing"

	"github.com/schooner-ml/schooner/pq"
)

func TestRoundTripAndLabels(t *testing.T) {
	rows := []Row{
		{Machine: "m", Impl: "direct", Threads: 4, InsertPct: 25, Size: 1024, KeyRange: 1 << 20, Shards: 8, Seconds: 1, Ops: 10e6, Mops: 10, FinalMode: "direct"},
		{Machine: "m", Impl: "delegate", Threads: 4, InsertPct: 25, Size: 1024, KeyRange: 1 << 20, Shards: 8, Seconds: 1, Ops: 20e6, Mops: 20, FinalMode: "delegate"},
		{Machine: "m", Impl: "direct", Threads: 8, InsertPct: 25, Size: 1024, KeyRange: 1 << 20, Mops: 10},
		{Machine: "m", Impl: "delegate", Threads: 8, InsertPct: 25, Size: 1024, KeyRange: 1 << 20, Mops: 10.4},
		{Machine: "m", Impl: "heap", Threads: 16, InsertPct: 25, Size: 1024, KeyRange: 1 << 20, Mops: 3},
	}
	var b bytes.Buffer
	if err := Write(&b, rows); err != nil {
		t.Fatal(err)
	}
	got, err := Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) || got[1] != rows[1] {
		t.Fatalf("round trip: got %+v", got)
	}
	ex := Examples(got, DefaultRule)
	if len(ex) != 2 || ex[0].Class != pq.PreferDelegate || ex[1].Class != pq.Neutral {
		t.Fatalf("examples: %+v", ex)
	}
	if f := ex[0].Features; f.Threads != 4 || f.InsertShare != 0.25 || f.LogSize < 10 || f.LogSize > 10.01 || f.LogKeyRange != 20 || f.Shards != 8 {
		t.Errorf("features: %+v", f)
	}
}

func TestMediansKeepTheMiddleTrial(t *testing.T) {
	cell := Row{Machine: "m", Threads: 4, InsertPct: 50, Size: 1024, KeyRange: 1 << 20, Shards: 8}
	trial := func(impl string, mops float64, mode string) Row {
		r := cell
		r.Impl, r.Mops, r.FinalMode = impl, mops, mode
		return r
	}
	rows := []Row{
		trial("direct", 9, "direct"), trial("delegate", 1, "delegate"), trial("adaptive", 3, "delegate"),
		trial("adaptive", 10, "direct"), trial("direct", 30, "direct"), trial("delegate", 2, "delegate"),
		trial("direct", 11, "direct"), trial("adaptive", 8, "direct"),
	}
	got := Medians(rows)
	if len(got) != 3 {
		t.Fatalf("want one row per implementation, got %+v", got)
	}
	want := map[string]Row{"direct": rows[6], "delegate": rows[1], "adaptive": rows[7]}
	for _, r := range got {
		if r != want[r.Impl] {
			t.Errorf("%s: got %+v, want %+v", r.Impl, r, want[r.Impl])
		}
	}
	ex := Examples(rows, DefaultRule)
	if len(ex) != 1 || ex[0].Direct != 11 || ex[0].Delegate != 1 || ex[0].Class != pq.PreferDirect {
		t.Errorf("examples use the medians: %+v", ex)
	}
}
