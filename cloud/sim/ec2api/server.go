package ec2api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/schooner-ml/schooner/cloud"
)

// Backend is what the face needs from the cloud behind it: the provider itself, its event log
// (to describe instances that are gone from List, as EC2 keeps terminated instances visible for
// a while) and the interruption state that the metadata service reports. cloud.Fake and the
// simulated market implement it.
type Backend interface {
	cloud.Provider
	cloud.EventSource
	cloud.InterruptionSource
}

// Options tune the face; the zero value works.
type Options struct {
	// OwnerID is the account id in reservations; default 123456789012.
	OwnerID string
	// Now is the clock for timestamps (spot price history, termination times); default
	// time.Now. The simulator passes its compressed clock.
	Now func() time.Time
}

// Server is the EC2 face over a Backend. It is an http.Handler; Start also serves it on a
// listener of its own. Safe for concurrent use.
type Server struct {
	backend Backend
	opts    Options
	reg     *registry
	imds    *imdsTokens
	events  *eventsQueue

	mu       sync.Mutex
	throttle int
	calls    map[string]int
	tokens   map[string]idempotent
	// tokenOrder is tokens' keys oldest first: past maxClientTokens the oldest is forgotten.
	tokenOrder []string
	// runMu serialises RunInstances calls that carry a ClientToken, so two concurrent retries
	// of one request cannot both launch.
	runMu sync.Mutex

	ln  net.Listener
	srv *http.Server
}

// New returns a face over b.
func New(b Backend, opts Options) *Server {
	if opts.OwnerID == "" {
		opts.OwnerID = "123456789012"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Server{
		backend: b, opts: opts, reg: newRegistry(), imds: newIMDSTokens(), events: newEventsQueue(b),
		calls: map[string]int{}, tokens: map[string]idempotent{},
	}
}

// Start serves the face on addr ("127.0.0.1:0" picks a free port) until Close.
func (s *Server) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.ln = ln
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	srv := s.srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
	return nil
}

// Addr is the base URL of the started server (http://127.0.0.1:port), what an SDK client takes
// as BaseEndpoint; empty before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return "http://" + s.ln.Addr().String()
}

// IMDSEndpoint is the metadata endpoint of instance id on the started server.
func (s *Server) IMDSEndpoint(id string) string { return s.Addr() + IMDSPrefix + id }

// Close stops the server started by Start.
func (s *Server) Close() error {
	s.mu.Lock()
	srv := s.srv
	s.srv, s.ln = nil, nil
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	// Requests here are short; a client stuck in one must not hold up the stop of the process
	// that serves the face (`schooner dev` has 10 s for everything).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return srv.Close()
	}
	return nil
}

// ThrottleNext makes the next n EC2 API requests fail with RequestLimitExceeded (HTTP 503), as
// EC2 does when an account exceeds its request rate, so tests can prove the client retries.
func (s *Server) ThrottleNext(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle += n
}

// Calls returns how many requests for action arrived, throttled ones included.
func (s *Server) Calls(action string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[action]
}

// Reset forgets call counts, pending throttles and client tokens.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle = 0
	s.calls = map[string]int{}
	s.tokens = map[string]idempotent{}
	s.tokenOrder = nil
}

// maxClientTokens is how many RunInstances client tokens the face remembers. EC2 remembers a
// token for a limited time; a face that runs for days forgets the oldest instead, so the map
// does not grow with every launch ever made.
const maxClientTokens = 4096

// rememberToken keeps what a client token bought, forgetting the oldest past the cap.
func (s *Server) rememberToken(tok string, v idempotent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tokens[tok]; !ok {
		s.tokenOrder = append(s.tokenOrder, tok)
	}
	s.tokens[tok] = v
	for len(s.tokenOrder) > maxClientTokens {
		delete(s.tokens, s.tokenOrder[0])
		s.tokenOrder = s.tokenOrder[1:]
	}
}

// admit counts the call and reports whether it is to be throttled.
func (s *Server) admit(action string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[action]++
	if s.throttle > 0 {
		s.throttle--
		return true
	}
	return false
}

// ServeHTTP routes metadata paths to the IMDS handler and everything else to the EC2 API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if action, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), sqsTargetPrefix); ok {
		s.serveSQS(w, r, action)
		return
	}
	if strings.HasPrefix(r.URL.Path, IMDSPrefix) {
		s.serveIMDS(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/latest/") {
		http.Error(w, "this simulator serves instance metadata under "+IMDSPrefix+"<instance-id>/latest/", http.StatusNotFound)
		return
	}
	s.serveAPI(w, r)
}
