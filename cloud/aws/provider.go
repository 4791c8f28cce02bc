// Package aws is schooner's cloud.Provider for Amazon EC2, over aws-sdk-go-v2: offerings from
// the catalog priced with live spot prices, instances launched with RunInstances (spot as
// one-time requests that terminate on interruption), found again by tag, and EC2's error codes
// classified into cloud's typed errors in one place (errors.go). Watcher reads the spot notice
// from the instance metadata service on the machine itself.
//
// With Options.Endpoint the same code drives the EC2 face of the simulator (cloud/sim/ec2api),
// so the SDK path, retries included, is what tests and `schooner dev --cloud aws` exercise.
package aws

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/catalog"
)

const providerName = "aws"

// PlaceholderImageID is the AMI used when Options.ImageID is empty. It names no real image: the
// simulator accepts anything, real EC2 answers InvalidAMIID.NotFound. For real use, set an AMI
// of the region with the NVIDIA driver (a Deep Learning AMI, say) per region in ImageIDs.
const PlaceholderImageID = "ami-00000000000000000"

// Options configure the provider. Only Regions matters for most uses.
type Options struct {
	// Regions to offer and launch in, one EC2 client each. Empty: the region of the default
	// SDK configuration (AWS_REGION, profile), else us-east-1.
	Regions []string
	// Endpoint overrides every client's BaseEndpoint, e.g. the simulator's
	// http://127.0.0.1:port (flag --aws-endpoint). With an endpoint and no credentials in the
	// environment or shared files, static dummy credentials are used so the simulator needs no
	// account; instance-role credentials are not consulted then.
	Endpoint string
	// Catalog gives each instance type its GPU type and count and on-demand price; default
	// catalog.Default(). Types the catalog does not know are not offered.
	Catalog *catalog.Catalog
	// ImageID is the AMI to launch; ImageIDs overrides it per region (AMIs are regional).
	// Default PlaceholderImageID.
	ImageID  string
	ImageIDs map[string]string
	// Credentials, when set, replace the default credential chain.
	Credentials aws.CredentialsProvider
	// RetryMaxAttempts bounds the SDK's attempts per call (throttling and transient faults are
	// retried; capacity and quota errors are not). Default 3, the SDK's.
	RetryMaxAttempts int
	// RetryMaxBackoff caps the SDK's delay between attempts; default 20s, the SDK's. Tests
	// shrink it.
	RetryMaxBackoff time.Duration
	// PageSize is MaxResults for DescribeInstances (5..1000); default 1000.
	PageSize int32
	// Now is the clock for interruption times EC2 does not state; default time.Now.
	Now func() time.Time
}

// Provider is cloud.Provider over EC2. Safe for concurrent use.
type Provider struct {
	opts    Options
	clients map[string]EC2
	regions []string

	mu sync.Mutex
	// home remembers the region of every instance seen, so Describe and Terminate ask one
	// region instead of all.
	home map[string]string
	// spot remembers the last spot price seen per offering, for PricePerHour.
	spot map[cloud.OfferingKey]float64
}

var _ cloud.Provider = (*Provider)(nil)

// New builds one EC2 client per region from the default SDK configuration (see Options).
func New(ctx context.Context, opts Options) (*Provider, error) {
	clients, regions, err := newClients(ctx, opts)
	if err != nil {
		return nil, err
	}
	opts.Regions = regions
	return NewFromClients(opts, clients), nil
}

// NewFromClients builds the provider over given clients keyed by region, e.g. fakes of EC2;
// Options.Regions is then the keys of clients.
func NewFromClients(opts Options, clients map[string]EC2) *Provider {
	if opts.Catalog == nil {
		opts.Catalog = catalog.Default()
	}
	if opts.PageSize == 0 {
		opts.PageSize = 1000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	regions := make([]string, 0, len(clients))
	for r := range clients {
		regions = append(regions, r)
	}
	sort.Strings(regions)
	opts.Regions = regions
	return &Provider{opts: opts, clients: clients, regions: regions,
		home: map[string]string{}, spot: map[cloud.OfferingKey]float64{}}
}

// Name is "aws".
func (p *Provider) Name() string { return providerName }

// Regions are the regions the provider has clients for, sorted.
func (p *Provider) Regions() []string { return append([]string(nil), p.regions...) }

func (p *Provider) imageID(region string) string {
	if id, ok := p.opts.ImageIDs[region]; ok && id != "" {
		return id
	}
	if p.opts.ImageID != "" {
		return p.opts.ImageID
	}
	return PlaceholderImageID
}

// client is the EC2 client of region, or an invalid-request error for a region not configured.
func (p *Provider) client(region string) (EC2, error) {
	c, ok := p.clients[region]
	if !ok {
		return nil, &cloud.Error{Kind: cloud.ErrInvalidRequest, Provider: providerName,
			Message: fmt.Sprintf("region %q is not configured (have %v)", region, p.regions)}
	}
	return c, nil
}

func (p *Provider) remember(region string, insts []cloud.Instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, inst := range insts {
		p.home[inst.ID] = region
	}
}

// homes splits ids into those with a known region (by region) and the rest.
func (p *Provider) homes(ids []string) (known map[string][]string, unknown []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	known = map[string][]string{}
	for _, id := range ids {
		if r, ok := p.home[id]; ok {
			known[r] = append(known[r], id)
		} else {
			unknown = append(unknown, id)
		}
	}
	return known, unknown
}
