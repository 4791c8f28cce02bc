package ec2api

import (
	"fmt"
	"testing"
	"time"

	"github.com/schooner-ml/schooner/cloud"
)

// eventLog is a cloud.EventSource over a slice.
type eventLog []cloud.Event

func (l eventLog) EventsSince(seq int64) []cloud.Event {
	var out []cloud.Event
	for _, e := range l {
		if e.Seq > seq {
			out = append(out, e)
		}
	}
	return out
}

// The registry of instances the face describes keeps the live ones and the recently ended
// ones, not every instance ever launched.
func TestRegistryForgetsInstancesLongEnded(t *testing.T) {
	r := newRegistry()
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var log eventLog
	add := func(kind cloud.EventKind, id string, at time.Time) {
		log = append(log, cloud.Event{Seq: int64(len(log) + 1), Kind: kind, Time: at, Instance: cloud.Instance{ID: id}})
	}
	add(cloud.EventRunning, "i-live", start)
	for i := range 1000 {
		at := start.Add(time.Duration(i) * time.Minute)
		id := fmt.Sprintf("i-%04d", i)
		add(cloud.EventRunning, id, at)
		add(cloud.EventTerminated, id, at.Add(time.Second))
		r.sync(log)
	}
	ids := r.sync(log)
	if len(ids) > 62 {
		t.Errorf("%d instances kept; want the live one and the last hour's ended ones", len(ids))
	}
	if ids[0] != "i-live" {
		t.Errorf("the live instance was forgotten: %v", ids[:3])
	}
	if _, ok := r.endedAt("i-0999"); !ok {
		t.Error("an instance that ended a minute ago was forgotten")
	}
}

// RunInstances client tokens are remembered up to a cap, oldest forgotten first.
func TestClientTokensStayBounded(t *testing.T) {
	s := New(cloud.NewFake("aws", testOfferings()...), Options{})
	for i := range maxClientTokens + 100 {
		s.rememberToken(fmt.Sprintf("tok-%d", i), idempotent{})
	}
	if n := len(s.tokens); n != maxClientTokens {
		t.Errorf("%d client tokens kept, want %d", n, maxClientTokens)
	}
	if _, ok := s.tokens["tok-0"]; ok {
		t.Error("the oldest token was kept")
	}
	if _, ok := s.tokens[fmt.Sprintf("tok-%d", maxClientTokens+99)]; !ok {
		t.Error("the newest token was forgotten")
	}
}
