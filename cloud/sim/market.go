package sim

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/catalog"
)

// Market is the simulated spot market. Create it with New.
type Market struct {
	mu  sync.Mutex
	cfg Config
	now time.Time

	offerings []*offering // sorted by zone, then instance type
	byKey     map[Key]*offering
	zones     map[string]string // zone -> provider
	types     map[string]string // instance type -> provider
	params    map[string]ProviderParams

	instances map[string]*instance
	order     []*instance // creation order
	gpusHeld  map[string]int
	tokens    map[string]tokenResult
	ids       *idSource

	queue  queue
	events []cloud.Event
	// eventBase is the Seq of the last event pruned from the front of events (0 before any).
	eventBase int64

	// gone are the instances that ended, oldest first, until prune forgets them; the cost of
	// the forgotten ones is kept per job and in total.
	gone        []gone
	prunedCost  map[string]float64
	prunedTotal float64

	// usageErrors counts usage records (Config.Usage) that could not be written.
	usageErrors int
}

var (
	_ cloud.Provider           = (*Market)(nil)
	_ cloud.EventSource        = (*Market)(nil)
	_ cloud.InterruptionSource = (*Market)(nil)
)

// offering is one (zone, instance type) with its live state.
type offering struct {
	cloud.Offering // SpotPrice is the current price; SpotCapacity is unused
	params         ProviderParams

	level    int // spot instances obtainable now
	capacity process

	basePrice float64 // the catalog's typical spot price
	low, high float64 // price band, USD/h
	priceRand *rand.Rand

	spot     []*instance // live spot instances, oldest first
	onDemand int         // live on-demand instances
	odLimit  int         // -1: unlimited
}

// New builds a market from cfg. It fails when cfg names zones, types or providers the
// catalog lacks (cloud.ErrNotFound) or sets something impossible (cloud.ErrInvalidRequest).
func New(cfg Config) (*Market, error) {
	if cfg.Catalog == nil {
		cfg.Catalog = catalog.Default()
	}
	if cfg.Start.IsZero() {
		cfg.Start = DefaultStart
	}
	if cfg.TimeScale == 0 {
		cfg.TimeScale = 1
	}
	if cfg.Retention == 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Tick == 0 {
		cfg.Tick = 25 * time.Millisecond
	}
	cfg.Price = cfg.Price.withDefaults()
	if cfg.TimeScale < 0 || cfg.Tick < 0 {
		return nil, invalidConfig("time scale %g and tick %s must not be negative", cfg.TimeScale, cfg.Tick)
	}
	if err := cfg.Price.validate(); err != nil {
		return nil, invalidConfig("%v", err)
	}
	m := &Market{
		cfg: cfg, now: cfg.Start,
		byKey: map[Key]*offering{}, zones: map[string]string{}, types: map[string]string{},
		params: map[string]ProviderParams{}, instances: map[string]*instance{},
		gpusHeld: map[string]int{}, tokens: map[string]tokenResult{}, ids: newIDSource(cfg.Seed),
		prunedCost: map[string]float64{},
	}
	if err := m.buildOfferings(); err != nil {
		return nil, err
	}
	if err := m.checkConfigKeys(); err != nil {
		return nil, err
	}
	traced := m.tracedZoneGPUs()
	for _, o := range m.offerings {
		if err := m.startOffering(o, traced); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Name is "sim"; the instances it makes say which cloud they simulate in their Provider.
func (m *Market) Name() string { return "sim" }

// Catalog is the catalog the market was built from.
func (m *Market) Catalog() *catalog.Catalog { return m.cfg.Catalog }

// Params returns the behaviour of provider's simulated cloud, defaults filled in.
func (m *Market) Params(provider string) ProviderParams {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.params[provider]; ok {
		return p
	}
	return m.cfg.params(provider)
}

// TimeScale is the market's simulated seconds per wall second while it runs (cloud.Scaled),
// so jobs on it convert notice periods and iteration times without being told by the user.
func (m *Market) TimeScale() cloud.TimeScale { return cloud.TimeScale(m.cfg.TimeScale) }
