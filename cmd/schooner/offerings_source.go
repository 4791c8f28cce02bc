package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/planner"
)

// offeringSource is where the plan commands get GPUs: a JSON file (--offerings, a list of
// planner pools or of cloud offerings) or a provider (--cloud). read returns the offerings and
// the file's pools that filter lets through, and a note saying where they came from.
type offeringSource struct {
	path  string
	cloud *cloudFlags
}

func (s offeringSource) read(ctx context.Context, filter cloud.OfferingFilter) ([]cloud.Offering, []planner.Pool, string, error) {
	if s.path == "" {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		p, src, err := s.cloud.provider(ctx, false)
		if err != nil {
			return nil, nil, "", err
		}
		offers, err := p.Offerings(ctx, filter)
		if err != nil {
			return nil, nil, "", fmt.Errorf("listing offerings, %w", err)
		}
		return offers, nil, src, nil
	}
	data, err := os.ReadFile(s.path)
	if err != nil {
		return nil, nil, "", fmt.Errorf("reading --offerings, %w", err)
	}
	pools, offers, err := decodeOfferings(data)
	if err != nil {
		return nil, nil, "", fmt.Errorf("--offerings %s: %w", s.path, err)
	}
	var keptOffers []cloud.Offering
	for _, o := range offers {
		if filter.Match(o) {
			keptOffers = append(keptOffers, o)
		}
	}
	var keptPools []planner.Pool
	for _, p := range pools {
		if filter.Match(cloud.Offering{Region: p.Region, Zone: p.Zone, InstanceType: p.InstanceType, GPUType: p.GPU}) {
			keptPools = append(keptPools, p)
		}
	}
	return keptOffers, keptPools, s.path, nil
}
