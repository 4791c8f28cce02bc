package gcp

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/compute/metadata"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/internal/defaults"
)

// DefaultNoticeLead is how long GCE gives a preempted VM between the preemption notice and
// the stop: about 30 seconds of ACPI soft-off, during which instance/preempted reads TRUE.
const DefaultNoticeLead = 30 * time.Second

// WatcherOptions configure a Watcher. The zero value watches the real metadata server
// (169.254.169.254, or GCE_METADATA_HOST).
type WatcherOptions struct {
	// MetadataURL, when set, replaces http://169.254.169.254 for every metadata request:
	// the simulator serves VM <name> under <endpoint>/vm/<name> (gceapi.Server.MetadataURL).
	MetadataURL string
	// HTTPClient is the base client; requests go through its transport. A client with a
	// 5 s timeout when nil.
	HTTPClient *http.Client
	// NoticeLead is the time from the notice to the stop; DefaultNoticeLead when zero.
	NoticeLead time.Duration
	// InstanceID and Zone name the VM in the interruptions reported; read from the
	// metadata server (instance/name, instance/zone) when empty.
	InstanceID string
	Zone       string
	// Now is the clock.
	Now func() time.Time
}

// Watcher is cloud.InterruptionWatcher over the GCE metadata server's instance/preempted.
// GCE sets it TRUE when the preemption begins, the start of the ~30 s notice, so a TRUE is
// reported as a Notice whose Deadline is the first TRUE plus NoticeLead. It stays a Notice
// past the deadline: the VM cannot tell a slow shutdown from the end, and the control plane
// confirms the preemption with the provider before it acts.
type Watcher struct {
	c    *metadata.Client
	opts WatcherOptions

	mu    sync.Mutex
	since time.Time // when TRUE was first read; zero while FALSE
	id    string
	zone  string
}

var _ cloud.InterruptionWatcher = (*Watcher)(nil)

// NewWatcher returns a Watcher; it makes no request until Poll.
func NewWatcher(opts WatcherOptions) (*Watcher, error) {
	defaults.Positive(&opts.NoticeLead, DefaultNoticeLead)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	if opts.MetadataURL != "" {
		base, err := url.Parse(strings.TrimRight(opts.MetadataURL, "/"))
		if err != nil || base.Host == "" {
			return nil, fmt.Errorf("gcp: bad metadata URL %q", opts.MetadataURL)
		}
		next := hc.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		cp := *hc
		cp.Transport = rebase{base: base, next: next}
		hc = &cp
	}
	return &Watcher{c: metadata.NewClient(hc), opts: opts, id: opts.InstanceID, zone: opts.Zone}, nil
}

// Poll reads instance/preempted once.
func (w *Watcher) Poll(ctx context.Context) (*cloud.Interruption, error) {
	v, err := w.c.GetWithContext(ctx, "instance/preempted")
	if err != nil {
		return nil, fmt.Errorf("reading instance/preempted from the metadata server, %w", err)
	}
	if strings.TrimSpace(v) != "TRUE" {
		w.mu.Lock()
		w.since = time.Time{}
		w.mu.Unlock()
		return nil, nil
	}
	if err := w.identify(ctx); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.since.IsZero() {
		w.since = w.opts.Now()
	}
	return &cloud.Interruption{Kind: cloud.Notice, InstanceID: w.id, Zone: w.zone, Deadline: w.since.Add(w.opts.NoticeLead), At: w.since}, nil
}

// identify reads the VM's name and zone once, when a notice first needs them.
func (w *Watcher) identify(ctx context.Context) error {
	w.mu.Lock()
	id, zone := w.id, w.zone
	w.mu.Unlock()
	var err error
	if id == "" {
		if id, err = w.c.InstanceNameWithContext(ctx); err != nil {
			return fmt.Errorf("reading instance/name from the metadata server, %w", err)
		}
	}
	if zone == "" {
		if zone, err = w.c.ZoneWithContext(ctx); err != nil {
			return fmt.Errorf("reading instance/zone from the metadata server, %w", err)
		}
	}
	w.mu.Lock()
	w.id, w.zone = id, lastSegment(zone)
	w.mu.Unlock()
	return nil
}

// rebase sends every request to base instead of the host it names, keeping the path under
// base's path: http://169.254.169.254/computeMetadata/v1/x becomes <base>/computeMetadata/v1/x.
type rebase struct {
	base *url.URL
	next http.RoundTripper
}

func (t rebase) RoundTrip(r *http.Request) (*http.Response, error) {
	r2 := r.Clone(r.Context())
	r2.URL.Scheme, r2.URL.Host, r2.Host = t.base.Scheme, t.base.Host, t.base.Host
	r2.URL.Path = t.base.Path + r.URL.Path
	r2.URL.RawPath = ""
	return t.next.RoundTrip(r2)
}
