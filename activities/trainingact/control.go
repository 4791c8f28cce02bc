package trainingact

import (
	"context"
	"sync"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/activities/fleetact"
	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/bridge"
	"github.com/schooner-ml/schooner/training"
)

// Control holds the control-plane activities of a training job: offerings, planning and
// the job's checkpoint store (the instance activities are fleetact's). Every dependency is a field so tests pass a
// cloud.Fake or the sim market, and the worker passes the real provider.
type Control struct {
	// Provider is where instances come from (a cloud.Multi, a real provider or the sim market).
	Provider cloud.Provider
	// Replanner caches plans so a replan after a preemption with unchanged pools is instant.
	// Nil gets a private one.
	Replanner *planner.Replanner
	// ProfilesDir is the model and network profiles directory ("" the bundled ones), as
	// `schooner plan search --profiles` takes it.
	ProfilesDir string
	// OpenStore opens a checkpoint store URL (default store.Open).
	OpenStore func(ctx context.Context, url string) (store.Store, error)
	// Verify compares a durable step with an uninterrupted simulated run; the worker wires
	// trainer/sim.VerifyStep. Nil makes VerifyTrainedState fail with a clear error.
	Verify func(ctx context.Context, r *checkpoint.Remote, step int64, seed int64, modelLayers int) error
	// StoreRoots are the only directories a job's file:// checkpoint store may be in
	// (store.DefaultRoots("") when nil: /var/lib/schooner and the OS temp dir); s3:// stores
	// are not confined.
	StoreRoots []string
	// Limits are the largest jobs this control plane accepts (zero fields: the defaults).
	Limits training.Limits
	// Logger receives what the activities decide (the zero value discards).
	Logger zerolog.Logger

	once   sync.Once
	models *bridge.Models
	rp     *planner.Replanner
}

func (t *Control) init() {
	t.once.Do(func() {
		t.models = &bridge.Models{Dir: t.ProfilesDir}
		t.rp = t.Replanner
		if t.rp == nil {
			t.rp = &planner.Replanner{}
		}
	})
}

// JobOfferings lists what the job may buy: the provider's offerings narrowed to the spec's
// clouds, regions, zones and GPU types. The spot policy does not filter offerings (each
// offering has both prices); PlanJob prices them as the policy allows. A region, zone or GPU
// type the provider does not offer at all is a spec error, reported at once with the field
// named: waiting for capacity that cannot come would only burn the job's time.
func (t *Control) JobOfferings(ctx context.Context, req training.JobOfferingsRequest) ([]cloud.Offering, error) {
	return fleetact.Offerings(ctx, t.Provider, req.Resources, "training")
}

// model returns the planner profile of the spec's model (bridge.Models caches one pointer
// per model, so the Replanner's cache hits across calls). A model it cannot profile is a
// final BadModel error: retrying would not make it known.
func (t *Control) model(m training.Model, seqLen int) (*planner.ModelProfile, *planner.Network, error) {
	t.init()
	p, n, err := t.models.Profile(bridge.ModelRef{Name: m.Name, Layers: m.Layers, Hidden: m.Hidden, Heads: m.Heads,
		FFN: m.FFN, Vocab: m.Vocab, SeqLen: seqLen})
	if err != nil {
		return nil, nil, temporal.NewNonRetryableApplicationError(err.Error(), training.ErrTypeBadModel, err)
	}
	return p, n, nil
}

// AdmissionLimits answers the workflow's question at its door: this control plane's limits.
func (t *Control) AdmissionLimits(context.Context) (training.Limits, error) {
	return t.Limits.WithDefaults(), nil
}
