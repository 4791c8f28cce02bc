package fleetact

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/internal/specfile"
)

// ErrTypeInvalidSpec is the error type Offerings fails with when the spec names a place or a
// GPU type nobody offers: training's and serving's InvalidSpec (the same string).
const ErrTypeInvalidSpec = "InvalidSpec"

// Offerings lists what a job may buy: the provider's offerings narrowed to the resources'
// clouds, regions, zones, GPU types and instance types. The spot policy does not filter offerings (each has
// both prices). A region, zone or GPU type the provider does not offer at all is a spec error,
// reported at once, non-retryable, with the field named (as "resources.…" of an "invalid
// <kind> spec"): waiting for capacity that cannot come would only burn the job's time.
// Training's JobOfferings and serving's Offerings activities both call it.
func Offerings(ctx context.Context, p cloud.Provider, r fleet.Resources, kind string) ([]cloud.Offering, error) {
	all, err := p.Offerings(ctx, cloud.OfferingFilter{})
	if err != nil {
		return nil, fmt.Errorf("listing offerings of %s: %w", p.Name(), err)
	}
	all = slices.DeleteFunc(all, func(o cloud.Offering) bool {
		return len(r.Clouds) > 0 && !slices.Contains(r.Clouds, o.Provider)
	})
	if problems := unknownPlaces(r, all); len(problems) > 0 {
		verr := &specfile.ValidationError{Kind: kind, Problems: problems}
		return nil, temporal.NewNonRetryableApplicationError(verr.Error(), ErrTypeInvalidSpec, nil, problems)
	}
	f := cloud.OfferingFilter{Regions: r.Regions, Zones: r.Zones, InstanceTypes: r.InstanceTypes}
	for _, g := range r.GPUTypes {
		f.GPUTypes = append(f.GPUTypes, gpu.Type(g))
	}
	out := make([]cloud.Offering, 0, len(all))
	for _, o := range all {
		if f.Match(o) {
			out = append(out, o)
		}
	}
	return out, nil
}

// unknownPlaces names every region, zone and GPU type of the resources that no offering of
// the allowed clouds has, with what is offered instead.
func unknownPlaces(r fleet.Resources, offers []cloud.Offering) []specfile.FieldError {
	var regions, zones, gpus, types []string
	for _, o := range offers {
		regions, zones, gpus = append(regions, o.Region), append(zones, o.Zone), append(gpus, string(o.GPUType))
		types = append(types, o.InstanceType)
	}
	var out []specfile.FieldError
	check := func(field string, want, have []string) {
		slices.Sort(have)
		have = slices.Compact(have)
		for i, w := range want {
			if !slices.Contains(have, w) {
				out = append(out, specfile.FieldError{Field: fmt.Sprintf("resources.%s[%d]", field, i),
					Problem: fmt.Sprintf("%q is not offered by %s; offered: %s", w, cloudsOf(r), strings.Join(have, ", "))})
			}
		}
	}
	check("regions", r.Regions, regions)
	check("zones", r.Zones, zones)
	check("gpu_types", r.GPUTypes, gpus)
	check("instance_types", r.InstanceTypes, types)
	return out
}

// cloudsOf names the clouds a spec allows, for messages.
func cloudsOf(r fleet.Resources) string {
	if len(r.Clouds) == 0 {
		return "any cloud"
	}
	return strings.Join(r.Clouds, "+")
}
