package ec2api

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// A flood of token requests for instances that do not exist is refused and leaves no token
// behind: the face serves every simulated machine from one map.
func TestIMDSRefusesTokensForUnknownInstances(t *testing.T) {
	h := newHarness(t)
	for i := range 200 {
		req, _ := http.NewRequest(http.MethodPut, fmt.Sprintf("%s%si-nothere%04d/latest/api/token", h.url, IMDSPrefix, i), nil)
		req.Header.Set("X-aws-ec2-metadata-token-ttl-seconds", "21600")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("token for an unknown instance: %d, want 404", resp.StatusCode)
		}
	}
	if n := h.face.imds.len(); n != 0 {
		t.Errorf("%d tokens kept for instances that do not exist", n)
	}
}

// Tokens of a real instance are bounded too: expired ones are swept as new ones are issued,
// and at the cap the one closest to expiry makes room.
func TestIMDSTokensStayBounded(t *testing.T) {
	tokens := newIMDSTokens()
	tokens.limit = 100
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	first := tokens.issue("i-1", now, now.Add(time.Hour))
	for i := range 1000 {
		tokens.issue("i-1", now, now.Add(6*time.Hour+time.Duration(i)*time.Second))
	}
	if n := tokens.len(); n != 100 {
		t.Fatalf("%d tokens after 1001 issued, want the cap of 100", n)
	}
	if tokens.valid(first, "i-1", now) {
		t.Error("the token closest to expiry should have made room")
	}
	// Past their TTL, the next issue sweeps them all.
	later := now.Add(7 * time.Hour)
	last := tokens.issue("i-1", later, later.Add(time.Minute))
	if n := tokens.len(); n != 1 {
		t.Errorf("%d tokens after every other one expired, want 1", n)
	}
	if !tokens.valid(last, "i-1", later) {
		t.Error("a fresh token is refused")
	}
}
