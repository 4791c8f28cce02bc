package servingact

import (
	"context"

	"github.com/schooner-ml/schooner/activities/fleetact"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/serving"
)

// Control holds a deployment's control-plane activities; Provider is where instances come
// from (a cloud.Multi, a real provider or the sim market).
type Control struct {
	Provider cloud.Provider
}

// Offerings lists what the deployment may buy (fleetact.Offerings: a region, zone or GPU
// type nobody offers is a non-retryable InvalidSpec naming the field).
func (c *Control) Offerings(ctx context.Context, req serving.OfferingsRequest) ([]cloud.Offering, error) {
	return fleetact.Offerings(ctx, c.Provider, req.Resources, "serving")
}
