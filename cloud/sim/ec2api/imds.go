package ec2api

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schooner-ml/schooner/cloud"
)

// IMDSPrefix starts the metadata paths: <IMDSPrefix><instance-id>/latest/... is what instance
// <instance-id> sees at /latest/... (see the package doc). For a handler served elsewhere than
// by Start, the endpoint of an instance is the server's base URL + IMDSPrefix + id.
const IMDSPrefix = "/imds/"

// IMDSv2 headers, spelled as the SDK sends them (header names are case-insensitive).
const (
	tokenHeader    = "X-Aws-Ec2-Metadata-Token"
	tokenTTLHeader = "X-Aws-Ec2-Metadata-Token-Ttl-Seconds"
	maxTokenTTL    = 21600 // seconds, IMDS's limit
)

// imdsTokens are the session tokens handed out by PUT /latest/api/token, each valid for one
// instance until it expires. Expiry runs on the wall clock, not the simulated one: the SDK
// caches a token for its TTL in wall time, and a compressed clock would expire it under it.
//
// The map is bounded: expired tokens are swept as new ones are issued, and at maxIMDSTokens
// the token closest to its expiry makes room (IMDS proper lets a machine hold only so many;
// here every simulated machine shares one map, and a client asking for a token per request
// would otherwise grow it for the token's whole TTL, up to six hours).
type imdsTokens struct {
	mu        sync.Mutex
	tokens    map[string]imdsToken
	limit     int
	nextSweep time.Time
}

type imdsToken struct {
	instance string
	expires  time.Time
}

// maxIMDSTokens is how many live tokens the face keeps, over all instances.
const maxIMDSTokens = 4096

// imdsSweepEvery is how often issuing a token also drops the expired ones.
const imdsSweepEvery = 10 * time.Second

func newIMDSTokens() *imdsTokens {
	return &imdsTokens{tokens: map[string]imdsToken{}, limit: maxIMDSTokens}
}

func (t *imdsTokens) issue(instance string, now, expires time.Time) string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	tok := base64.RawURLEncoding.EncodeToString(b[:])
	t.mu.Lock()
	defer t.mu.Unlock()
	if !now.Before(t.nextSweep) || len(t.tokens) >= t.limit {
		t.sweepLocked(now)
		t.nextSweep = now.Add(imdsSweepEvery)
	}
	for len(t.tokens) >= t.limit {
		t.evictLocked()
	}
	t.tokens[tok] = imdsToken{instance: instance, expires: expires}
	return tok
}

// sweepLocked drops the expired tokens.
func (t *imdsTokens) sweepLocked(now time.Time) {
	for k, it := range t.tokens {
		if !now.Before(it.expires) {
			delete(t.tokens, k)
		}
	}
}

// evictLocked drops the token that would expire first.
func (t *imdsTokens) evictLocked() {
	var first string
	var at time.Time
	for k, it := range t.tokens {
		if first == "" || it.expires.Before(at) {
			first, at = k, it.expires
		}
	}
	delete(t.tokens, first)
}

func (t *imdsTokens) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.tokens)
}

func (t *imdsTokens) valid(tok, instance string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	it, ok := t.tokens[tok]
	if ok && !now.Before(it.expires) {
		delete(t.tokens, tok)
		return false
	}
	return ok && it.instance == instance
}

// serveIMDS answers /imds/<id>/latest/... as instance <id>'s metadata service: IMDSv2 only
// (a GET without a valid token is 401), 404 for paths it does not know and for instances the
// backend does not know.
func (s *Server) serveIMDS(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, IMDSPrefix)
	id, p, _ := strings.Cut(rest, "/")
	if id == "" {
		http.NotFound(w, r)
		return
	}
	p = "/" + p
	if p == "/latest/api/token" {
		s.imdsToken(w, r, id)
		return
	}
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !s.imds.valid(r.Header.Get(tokenHeader), id, time.Now()) {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	got, err := s.backend.Describe(r.Context(), []string{id})
	if err != nil || len(got) == 0 {
		http.NotFound(w, r)
		return
	}
	inst := got[0]
	switch strings.TrimSuffix(p, "/") {
	case "/latest/meta-data/instance-id":
		writeText(w, inst.ID)
	case "/latest/meta-data/instance-type":
		writeText(w, inst.InstanceType)
	case "/latest/meta-data/placement/availability-zone":
		writeText(w, inst.Zone)
	case "/latest/meta-data/placement/region":
		writeText(w, inst.Region)
	case "/latest/meta-data/instance-life-cycle":
		if inst.Capacity == cloud.Spot {
			writeText(w, "spot")
		} else {
			writeText(w, "on-demand")
		}
	case "/latest/meta-data/spot/instance-action":
		s.instanceAction(w, r, id)
	default:
		// Includes events/recommendations/rebalance: the backend gives no rebalance hints.
		http.NotFound(w, r)
	}
}

func (s *Server) imdsToken(w http.ResponseWriter, r *http.Request, id string) {
	if r.Method != http.MethodPut {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	ttl, err := strconv.Atoi(r.Header.Get(tokenTTLHeader))
	if err != nil || ttl < 1 || ttl > maxTokenTTL {
		http.Error(w, "missing or invalid "+tokenTTLHeader, http.StatusBadRequest)
		return
	}
	// Only a machine that exists has a metadata service: a token for an unknown instance is
	// refused, so requests for made-up ids cannot fill the token map.
	if got, err := s.backend.Describe(r.Context(), []string{id}); err != nil || len(got) == 0 {
		http.NotFound(w, r)
		return
	}
	now := time.Now()
	tok := s.imds.issue(id, now, now.Add(time.Duration(ttl)*time.Second))
	w.Header().Set(tokenTTLHeader, strconv.Itoa(ttl))
	writeText(w, tok)
}

// instanceAction is 404 until the backend announces an interruption, then the JSON EC2 shows
// two minutes ahead: the action and when it will happen.
func (s *Server) instanceAction(w http.ResponseWriter, r *http.Request, id string) {
	in := s.backend.InterruptionOf(id)
	if in == nil {
		http.NotFound(w, r)
		return
	}
	body, _ := json.Marshal(struct {
		Action string `json:"action"`
		Time   string `json:"time"`
	}{"terminate", s.wallTime(in.Deadline).UTC().Format("2006-01-02T15:04:05Z")})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// wallTime is when t of the backend's clock comes on the wall clock. A machine's metadata
// speaks real time (EC2 says in UTC when it will act), while a simulated market's clock runs
// TimeScale times faster from where it stands now: at 60x a notice 2 simulated minutes ahead
// is 2 wall seconds ahead, which is what a node agent on that machine has to save in.
func (s *Server) wallTime(t time.Time) time.Time {
	scale := cloud.TimeScaleOf(s.backend)
	if scale == cloud.Real {
		return t
	}
	return time.Now().Add(scale.Wall(t.Sub(s.now())))
}

func writeText(w http.ResponseWriter, s string) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte(s))
}
