package gceapi

import (
	"fmt"
	"testing"
)

// The zone operations a long-running face keeps are bounded: past maxOperations the oldest
// go, with their insert requestIds.
func TestOperationsStayBounded(t *testing.T) {
	s := newOpStore()
	for i := range maxOperations + 500 {
		op := s.add(&operation{name: fmt.Sprintf("operation-%d", i), zone: "us-central1-a", kind: "insert"})
		op.requestID = fmt.Sprintf("req-%d", i)
		s.requestID[op.requestID] = op
	}
	if len(s.order) != maxOperations || len(s.byName) != maxOperations {
		t.Errorf("kept %d operations (%d by name), want %d", len(s.order), len(s.byName), maxOperations)
	}
	if len(s.requestID) != maxOperations {
		t.Errorf("kept %d request ids, want %d", len(s.requestID), maxOperations)
	}
	if _, ok := s.byName["us-central1-a/operation-0"]; ok {
		t.Error("the oldest operation was kept")
	}
	if _, ok := s.byName[fmt.Sprintf("us-central1-a/operation-%d", maxOperations+499)]; !ok {
		t.Error("the newest operation was forgotten")
	}
}
