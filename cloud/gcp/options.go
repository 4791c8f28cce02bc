package gcp

import (
	"time"

	"google.golang.org/api/option"

	"github.com/schooner-ml/schooner/cloud/catalog"
	"github.com/schooner-ml/schooner/internal/defaults"
)

// DefaultImage is the boot image used when Options.Image is empty: a public image family
// that always resolves. It is a placeholder: it carries no NVIDIA driver, so real GPU work
// wants a Deep Learning VM family (projects/deeplearning-platform-release/global/images/
// family/...) or an image with the node agent baked in.
const DefaultImage = "projects/debian-cloud/global/images/family/debian-12"

// Options configure a Provider. Project is required; everything else has a default.
type Options struct {
	Project string
	// Zones the provider offers and searches. When empty, the zones of Regions in the
	// catalog, and when that is empty too, every GCP zone of the catalog.
	Zones   []string
	Regions []string
	// Endpoint, when set, points the clients at another Compute endpoint (the simulator,
	// --gcp-endpoint) without authentication. Otherwise Application Default Credentials
	// are used against compute.googleapis.com.
	Endpoint string
	// ClientOptions are added to the clients' options (after the endpoint's).
	ClientOptions []option.ClientOption
	// Catalog supplies shapes, zones and price estimates; catalog.Default() when nil.
	Catalog *catalog.Catalog
	// Image is the boot disk's source image; DefaultImage when empty.
	Image string
	// DiskSizeGB is the boot disk size; 100 when zero.
	DiskSizeGB int64
	// Network is the VPC network; "global/networks/default" when empty.
	Network string
	// StartupScript, when set, is the VM's startup-script metadata (the node agent's
	// bootstrap).
	StartupScript string
	// NamePrefix starts every VM name; "schooner" when empty.
	NamePrefix string
	// PageSize is maxResults for list calls; 500 (GCE's maximum) when zero.
	PageSize int
	// CreateParallelism is how many inserts of one Create (or deletes of one Terminate)
	// run at once; 8 when zero, 1 to go strictly one after another.
	CreateParallelism int
	// PollInterval is how often a pending operation is polled; 1 s when zero, as the
	// client library's Operation.Wait starts.
	PollInterval time.Duration
	// Retry bounds the backoff on throttled calls.
	Retry Retry
	// Now is the clock (the simulator's may run fast).
	Now func() time.Time
}

// Retry bounds retries of throttled calls: Attempts calls in all, waiting Initial, then
// twice as long each time up to Max, with jitter.
type Retry struct {
	Attempts int
	Initial  time.Duration
	Max      time.Duration
}

func (o Options) withDefaults() Options {
	if o.Catalog == nil {
		o.Catalog = catalog.Default()
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	defaults.Positive(&o.DiskSizeGB, 100)
	if o.Network == "" {
		o.Network = "global/networks/default"
	}
	if o.NamePrefix == "" {
		o.NamePrefix = "schooner"
	}
	if o.PageSize <= 0 || o.PageSize > 500 {
		o.PageSize = 500
	}
	defaults.Positive(&o.CreateParallelism, 8)
	defaults.Positive(&o.PollInterval, time.Second)
	defaults.Positive(&o.Retry.Attempts, 6)
	defaults.Positive(&o.Retry.Initial, 500*time.Millisecond)
	defaults.Positive(&o.Retry.Max, 10*time.Second)
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}
