package sim

import (
	"fmt"
	"io"
	"time"

	"github.com/schooner-ml/schooner/cloud/catalog"
)

// DefaultStart is the simulated epoch when Config.Start is zero. It is fixed, not the wall
// clock, so a market built twice from the same Config behaves the same.
var DefaultStart = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Key names one offering of the market: an instance type in a zone. The capacity type is not
// part of it because spot and on-demand share the zone's hardware in the model.
type Key struct {
	Zone         string
	InstanceType string
}

func (k Key) String() string { return k.InstanceType + "/" + k.Zone }

// Config says what to simulate. The zero value simulates every offering of the default
// catalog with seeded stochastic capacity from DefaultStart.
type Config struct {
	// Seed makes the market reproducible: capacity models, price walks and instance ids are
	// all drawn from streams derived from it.
	Seed int64
	// Start is the simulated time the market begins at; DefaultStart when zero.
	Start time.Time
	// TimeScale is simulated seconds per wall second, used only by Run; 1 when zero.
	TimeScale float64
	// Tick is how often Run advances the clock in wall time; 25 ms when zero.
	Tick time.Duration
	// Catalog lists the offerings; catalog.Default() when nil.
	Catalog *catalog.Catalog

	// Providers, Zones and InstanceTypes restrict what is simulated; empty means all.
	// Naming something the catalog lacks is an error, so a typo does not silently empty the
	// market.
	Providers     []string
	Zones         []string
	InstanceTypes []string

	// Capacity sets the spot capacity of chosen offerings; any other offering gets the
	// seeded on/off model (see DefaultOnOff). Entries must name catalog offerings; those the
	// filters above leave out are ignored.
	Capacity map[Key]Capacity
	// OnDemandLimit caps the on-demand instances one offering can hold at once, to model
	// on-demand shortages too; offerings not listed are unlimited.
	OnDemandLimit map[Key]int
	// Params sets per-provider behaviour ("aws", "gcp"); zero fields take the defaults of
	// DefaultParams.
	Params map[string]ProviderParams
	// Price shapes the spot price walk.
	Price PriceModel
	// Retention is how long, in simulated time, a terminated or preempted instance stays
	// describable and its events stay in the log (DefaultRetention when zero; negative keeps
	// everything, for tests that read a whole run's log back).
	Retention time.Duration
	// Usage, if set, receives the market's usage report: a UsageRecord as one JSON line for
	// every instance whose billing ends (terminated or preempted after it ran). Writes happen
	// under the market's lock, so it should be a file or a buffer, not a slow network peer.
	Usage io.Writer
}

// ProviderParams is how one simulated cloud behaves.
type ProviderParams struct {
	// BootTime is how long an instance stays pending before it runs.
	BootTime time.Duration
	// NoticePeriod is the time between a preemption notice and the preemption.
	NoticePeriod time.Duration
	// MaxGPUs is the account quota: the most GPUs held at once over all this provider's
	// instances, spot and on-demand. 0 means unlimited.
	MaxGPUs int
	// MinBilled is the least time an instance that ran is charged for (both clouds charge a
	// one-minute minimum, then per second). 0 means the default; negative means none.
	MinBilled time.Duration
}

// DefaultParams returns the defaults for provider: AWS boots in about 2 minutes and gives 2
// minutes of notice; GCP boots in about 1 minute and gives 30 seconds. Both bill per second
// with a one-minute minimum.
func DefaultParams(provider string) ProviderParams {
	if provider == "gcp" {
		return ProviderParams{BootTime: time.Minute, NoticePeriod: 30 * time.Second, MinBilled: time.Minute}
	}
	return ProviderParams{BootTime: 2 * time.Minute, NoticePeriod: 2 * time.Minute, MinBilled: time.Minute}
}

// params merges p over the defaults of provider.
func (c *Config) params(provider string) ProviderParams {
	d := DefaultParams(provider)
	p := c.Params[provider]
	if p.BootTime > 0 {
		d.BootTime = p.BootTime
	}
	if p.NoticePeriod > 0 {
		d.NoticePeriod = p.NoticePeriod
	}
	if p.MaxGPUs > 0 {
		d.MaxGPUs = p.MaxGPUs
	}
	switch {
	case p.MinBilled > 0:
		d.MinBilled = p.MinBilled
	case p.MinBilled < 0:
		d.MinBilled = 0
	}
	return d
}

// PriceModel is the spot price walk: every MinInterval..MaxInterval the price of each
// offering moves by up to MaxStep (relative), pulled gently back toward the catalog's
// typical spot price and kept within [Low, High] x on-demand.
type PriceModel struct {
	// Fixed keeps every spot price at the catalog's typical spot price.
	Fixed bool
	// Low and High bound the price as fractions of on-demand; 0.2 and 0.6 when zero.
	Low, High float64
	// MinInterval and MaxInterval bound the time between steps; 5 and 15 minutes when both
	// are zero, and equal when one is.
	MinInterval, MaxInterval time.Duration
	// MaxStep is the largest relative move per step; 0.05 when zero.
	MaxStep float64
}

func (p PriceModel) withDefaults() PriceModel {
	if p.Low == 0 {
		p.Low = 0.2
	}
	if p.High == 0 {
		p.High = 0.6
	}
	switch {
	case p.MinInterval == 0 && p.MaxInterval == 0:
		p.MinInterval, p.MaxInterval = 5*time.Minute, 15*time.Minute
	case p.MinInterval == 0:
		p.MinInterval = p.MaxInterval
	case p.MaxInterval == 0:
		p.MaxInterval = p.MinInterval
	}
	if p.MaxStep == 0 {
		p.MaxStep = 0.05
	}
	return p
}

func (p PriceModel) validate() error {
	switch {
	case p.Low < 0 || p.High > 1 || p.Low > p.High:
		return fmt.Errorf("price band [%g, %g] must satisfy 0 <= low <= high <= 1", p.Low, p.High)
	case p.MinInterval < 0 || p.MaxInterval < p.MinInterval:
		return fmt.Errorf("price interval [%s, %s] must be non-negative and ordered", p.MinInterval, p.MaxInterval)
	case p.MaxStep < 0 || p.MaxStep >= 1:
		return fmt.Errorf("price max step %g must be in [0, 1)", p.MaxStep)
	}
	return nil
}
