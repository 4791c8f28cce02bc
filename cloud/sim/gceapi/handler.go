package gceapi

import (
	"net/http"
	"sync"
	"time"
)

// Options tune the face. The zero value serves every project and reports stockouts with
// ZONE_RESOURCE_POOL_EXHAUSTED.
type Options struct {
	// Project, when set, is the only project served; others are 404, as for a project the
	// caller cannot see.
	Project string
	// StockoutCode is the operation error code for a capacity shortage. GCE uses
	// ZONE_RESOURCE_POOL_EXHAUSTED and, for some shapes, ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS.
	StockoutCode string
	// Now is the clock for timestamps; the simulator passes its simulated clock.
	Now func() time.Time
}

// Handler serves the Compute Engine REST subset and the per-VM metadata server over a
// Backend. Safe for concurrent use.
type Handler struct {
	b    Backend
	opts Options
	mux  *http.ServeMux

	mu       sync.Mutex
	throttle int
	// specs keeps, per VM name, what insert asked for that the backend does not store
	// (termination action, host maintenance, the accelerator spelling) and whether the VM
	// was deleted through this face.
	specs map[string]*spec
	ops   *opStore
}

// New returns a Handler over b.
func New(b Backend, opts Options) *Handler {
	if opts.StockoutCode == "" {
		opts.StockoutCode = CodeZoneResourcePoolExhausted
	}
	h := &Handler{b: b, opts: opts, specs: map[string]*spec{}, ops: newOpStore()}
	h.mux = http.NewServeMux()
	const zone = "/compute/v1/projects/{project}/zones/{zone}"
	h.mux.HandleFunc("POST "+zone+"/instances", h.api(h.insertInstance))
	h.mux.HandleFunc("GET "+zone+"/instances", h.api(h.listInstances))
	h.mux.HandleFunc("GET "+zone+"/instances/{instance}", h.api(h.getInstance))
	h.mux.HandleFunc("DELETE "+zone+"/instances/{instance}", h.api(h.deleteInstance))
	h.mux.HandleFunc("GET "+zone+"/operations", h.api(h.listOperations))
	h.mux.HandleFunc("GET "+zone+"/operations/{operation}", h.api(h.getOperation))
	h.mux.HandleFunc("GET /vm/{instance}/computeMetadata/v1/{key...}", h.metadata)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, apiNotFound("The requested URL "+r.URL.Path+" was not found on this server."))
	})
	return h
}

// ServeHTTP routes r.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// ThrottleNext makes the next n Compute API requests fail with HTTP 429 rateLimitExceeded
// before they touch the backend, so tests can show a client backing off and succeeding.
// Metadata requests are not throttled.
func (h *Handler) ThrottleNext(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.throttle += n
}

// Throttling reports how many throttled replies are still queued.
func (h *Handler) Throttling() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.throttle
}

func (h *Handler) now() time.Time {
	if h.opts.Now != nil {
		return h.opts.Now()
	}
	return time.Now()
}

// apiFunc handles one Compute API call: it returns the reply message, or an error that is
// written in the Google JSON error format.
type apiFunc func(r *http.Request, c call) (any, error)

// call is what every Compute API route has in its path.
type call struct {
	project, zone string
}

// api wraps an apiFunc with what every Compute call shares: throttling, the project and
// zone checks, and the encoding of the reply.
func (h *Handler) api(f apiFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if h.takeThrottle() {
			writeError(w, apiThrottled())
			return
		}
		c := call{project: r.PathValue("project"), zone: r.PathValue("zone")}
		if h.opts.Project != "" && c.project != h.opts.Project {
			writeError(w, apiNotFound("The resource 'projects/"+c.project+"' was not found"))
			return
		}
		if err := h.checkZone(r, c); err != nil {
			writeError(w, err)
			return
		}
		reply, err := f(r, c)
		if err != nil {
			writeError(w, err)
			return
		}
		writeMessage(w, reply)
	}
}

func (h *Handler) takeThrottle() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.throttle > 0 {
		h.throttle--
		return true
	}
	return false
}
