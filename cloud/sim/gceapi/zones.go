package gceapi

import (
	"context"
	"github.com/schooner-ml/schooner/cloud/catalog"
	"net/http"

	"github.com/schooner-ml/schooner/cloud"
)

// checkZone answers 404 for a zone the backend does not offer, as GCE does for a zone that
// does not exist.
func (h *Handler) checkZone(r *http.Request, c call) error {
	offers, err := h.zoneOfferings(r.Context(), c)
	if err != nil {
		return err
	}
	if len(offers) == 0 {
		return apiNotFound("The resource '" + zonePath(c.project, c.zone) + "' was not found")
	}
	return nil
}

// zoneOfferings are the backend's offerings in the zone of c.
func (h *Handler) zoneOfferings(ctx context.Context, c call) ([]cloud.Offering, error) {
	offers, err := h.b.Offerings(ctx, cloud.OfferingFilter{Zones: []string{c.zone}})
	if err != nil {
		return nil, h.syncError(c, err)
	}
	return offers, nil
}

// findShape looks up the backend shape in offers. When it is missing it says which field
// of the request is wrong: the machine type, or the accelerator attached to a machine type
// that exists.
func findShape(offers []cloud.Offering, shape string) (cloud.Offering, string) {
	mt, _, _ := catalog.SplitAttachedName(shape)
	known := false
	for _, o := range offers {
		if o.InstanceType == shape {
			return o, ""
		}
		if m, _, _ := catalog.SplitAttachedName(o.InstanceType); m == mt {
			known = true
		}
	}
	if known {
		return cloud.Offering{}, "guestAccelerators"
	}
	return cloud.Offering{}, "machineType"
}
