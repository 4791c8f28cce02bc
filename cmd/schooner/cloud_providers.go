package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/aws"
	"github.com/schooner-ml/schooner/cloud/catalog"
	"github.com/schooner-ml/schooner/cloud/gcp"
	"github.com/schooner-ml/schooner/cloud/sim"
)

// Default addresses of the simulated cloud APIs that `schooner dev` serves.
const (
	defaultSimEC2Addr = "127.0.0.1:7240"
	defaultSimGCEAddr = "127.0.0.1:7241"
	simGCPProject     = "schooner-sim"
)

// cloudFlags choose a provider: the simulated market of a running `schooner dev` (reached
// through its EC2 and Compute faces, so the real SDK code paths are used), or AWS and GCP.
type cloudFlags struct {
	cloud       string
	awsEndpoint string
	awsRegions  []string
	gcpEndpoint string
	gcpProject  string
	gcpZones    []string
	simEC2      string
	simGCE      string
	simSeed     int64
	simScale    float64
}

func addCloudFlags(fs *pflag.FlagSet, f *cloudFlags) {
	fs.StringVar(&f.cloud, "cloud", "sim", "provider: sim (the simulated market of 'schooner dev'), aws, gcp, or aws+gcp")
	addProviderFlags(fs, f)
}

// addProviderFlags binds how each provider is reached (endpoints, regions, project, zones,
// the simulator's faces), for a command that binds --cloud itself.
func addProviderFlags(fs *pflag.FlagSet, f *cloudFlags) {
	fs.StringVar(&f.awsEndpoint, "aws-endpoint", "", "EC2 endpoint override, e.g. the simulator's http://"+defaultSimEC2Addr)
	fs.StringSliceVar(&f.awsRegions, "aws-region", catalog.KnownRegions("aws"), "AWS regions to use")
	fs.StringVar(&f.gcpEndpoint, "gcp-endpoint", "", "Compute Engine endpoint override, e.g. the simulator's http://"+defaultSimGCEAddr)
	fs.StringVar(&f.gcpProject, "gcp-project", "", "GCP project (default "+simGCPProject+" with --gcp-endpoint)")
	fs.StringSliceVar(&f.gcpZones, "gcp-zone", nil, "GCP zones to use (default: every zone of the catalog)")
	fs.StringVar(&f.simEC2, "sim-ec2", defaultSimEC2Addr, "address of the simulator's EC2 face (--cloud sim)")
	fs.StringVar(&f.simGCE, "sim-gce", defaultSimGCEAddr, "address of the simulator's Compute face (--cloud sim)")
	fs.Int64Var(&f.simSeed, "sim-seed", 1, "seed of the in-process market used when no 'schooner dev' is running (offerings only)")
	fs.Float64Var(&f.simScale, "sim-time-scale", 1, "the --time-scale of the 'schooner dev' whose market --cloud sim reaches (its faces cannot tell)")
}

// cloudNames are the values --cloud takes, in the order errors list them.
var cloudNames = []string{"sim", "aws", "gcp", "aws+gcp"}

// checkCloud refuses a --cloud that names no provider (none is allowed where noneMeans says
// what the command does without one).
func (f *cloudFlags) checkCloud(noneMeans string) error {
	if slices.Contains(cloudNames, f.cloud) || (f.cloud == "" && noneMeans != "") {
		return nil
	}
	last := len(cloudNames) - 1
	want := strings.Join(cloudNames[:last], ", ") + " or " + cloudNames[last]
	if noneMeans != "" {
		want += " (or none, " + noneMeans + ")"
	}
	return fmt.Errorf("invalid --cloud %q: want %s", f.cloud, want)
}

// provider builds the chosen provider. note is a line to show the user about where the
// data comes from (empty when obvious).
func (f *cloudFlags) provider(ctx context.Context, needLive bool) (p cloud.Provider, note string, err error) {
	if err := f.checkCloud(""); err != nil {
		return nil, "", err
	}
	switch f.cloud {
	case "aws":
		p, err = f.awsProvider(ctx, f.awsEndpoint)
		return p, "", err
	case "gcp":
		p, err = f.gcpProvider(ctx, f.gcpEndpoint)
		return p, "", err
	case "aws+gcp":
		a, err := f.awsProvider(ctx, f.awsEndpoint)
		if err != nil {
			return nil, "", err
		}
		g, err := f.gcpProvider(ctx, f.gcpEndpoint)
		if err != nil {
			return nil, "", err
		}
		return &cloud.Multi{Providers: []cloud.Provider{a, g}}, "", nil
	default: // sim
		return f.simProvider(ctx, needLive)
	}
}

func (f *cloudFlags) awsProvider(ctx context.Context, endpoint string) (cloud.Provider, error) {
	if err := checkEndpoint("--aws-endpoint", endpoint, defaultSimEC2Addr); err != nil {
		return nil, err
	}
	return aws.New(ctx, aws.Options{Regions: f.awsRegions, Endpoint: endpoint})
}

// checkEndpoint refuses an endpoint override that is not an http(s) URL with a host: the SDKs
// take any string and fail only after their retries, with a message about an empty scheme.
func checkEndpoint(flag, endpoint, example string) error {
	if endpoint == "" {
		return nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("invalid %s %q: want an http or https URL with a host, e.g. http://%s", flag, endpoint, example)
	}
	return nil
}

func (f *cloudFlags) gcpProvider(ctx context.Context, endpoint string) (cloud.Provider, error) {
	project := f.gcpProject
	if project == "" && endpoint != "" {
		project = simGCPProject
	}
	if project == "" {
		return nil, fmt.Errorf("--gcp-project is required for GCP")
	}
	if err := checkEndpoint("--gcp-endpoint", endpoint, defaultSimGCEAddr); err != nil {
		return nil, err
	}
	return gcp.New(ctx, gcp.Options{Project: project, Zones: f.gcpZones, Endpoint: endpoint})
}

// simProvider talks to the market inside a running `schooner dev` through both faces. With
// no dev server and a read-only command, it falls back to a fresh in-process market.
func (f *cloudFlags) simProvider(ctx context.Context, needLive bool) (cloud.Provider, string, error) {
	if reachable(f.simEC2) && reachable(f.simGCE) {
		a, err := f.awsProvider(ctx, "http://"+f.simEC2)
		if err != nil {
			return nil, "", err
		}
		g, err := f.gcpProvider(ctx, "http://"+f.simGCE)
		if err != nil {
			return nil, "", err
		}
		return &cloud.Multi{Providers: []cloud.Provider{a, g}, Scale: cloud.TimeScale(f.simScale)},
			fmt.Sprintf("simulated market of 'schooner dev' via its EC2 (%s) and Compute (%s) faces", f.simEC2, f.simGCE), nil
	}
	if needLive {
		return nil, "", fmt.Errorf("no simulated market answers at %s and %s: start 'schooner dev' first (or pass --sim-ec2/--sim-gce)", f.simEC2, f.simGCE)
	}
	m, err := newSimMarket(f.simSeed, 1)
	if err != nil {
		return nil, "", err
	}
	return m, fmt.Sprintf("fresh in-process simulated market (seed %d) at its start time: no 'schooner dev' is running", f.simSeed), nil
}

// newSimMarket is the market of `schooner dev`: every catalog offering, the bundled real
// AWS traces on p3.2xlarge, the seeded on/off model elsewhere.
func newSimMarket(seed int64, timeScale float64) (*sim.Market, error) {
	cfg := sim.Config{Seed: seed, TimeScale: timeScale}
	if err := cfg.UseBundledTraces(); err != nil {
		return nil, err
	}
	return sim.New(cfg)
}

func reachable(addr string) bool {
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		addr = u.Host
	}
	c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}
