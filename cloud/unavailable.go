package cloud

import (
	"sort"
	"sync"
	"time"
)

// DefaultUnavailableTTL is how long a capacity error steers requests away from an offering.
// Karpenter uses 3 minutes; spot shortages in a zone usually last longer than one retry, and
// coming back sooner wastes the caller's time on a likely failure.
const DefaultUnavailableTTL = 3 * time.Minute

// Unavailable remembers offerings that recently failed for lack of capacity, so the next
// attempt goes elsewhere: an ExpirySet on a clock, safe for concurrent use, with the reason
// of each entry. The clock is injectable because the simulator runs faster than wall time.
// Workflows keep the ExpirySet itself in their state, with workflow time.
type Unavailable struct {
	TTL time.Duration
	Now func() time.Time

	mu      sync.Mutex
	set     ExpirySet
	reasons map[OfferingKey]string
}

// UnavailableEntry is one remembered offering, for status output.
type UnavailableEntry struct {
	Key    OfferingKey `json:"key"`
	Until  time.Time   `json:"until"`
	Reason string      `json:"reason"`
}

func (u *Unavailable) now() time.Time {
	if u.Now != nil {
		return u.Now()
	}
	return time.Now()
}

func (u *Unavailable) ttl() time.Duration {
	if u.TTL > 0 {
		return u.TTL
	}
	return DefaultUnavailableTTL
}

// Mark records key as unavailable for the TTL from now.
func (u *Unavailable) Mark(key OfferingKey, reason string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.reasons == nil {
		u.reasons = map[OfferingKey]string{}
	}
	now := u.now()
	u.set.Prune(now)
	u.set.Add(key, now.Add(u.ttl()))
	u.reasons[key] = reason
}

// Observe feeds an error from creating key: capacity errors mark it, anything else is
// ignored. It reports whether the key was marked.
func (u *Unavailable) Observe(key OfferingKey, err error) bool {
	if !IsInsufficientCapacity(err) {
		return false
	}
	if e, ok := AsError(err); ok && e.Offering != nil {
		key = *e.Offering
	}
	u.Mark(key, err.Error())
	return true
}

// IsUnavailable reports whether key is still marked.
func (u *Unavailable) IsUnavailable(key OfferingKey) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.set.Has(key, u.now())
}

// Filter returns the offerings that are not marked unavailable for capacity c.
func (u *Unavailable) Filter(offers []Offering, c CapacityType) []Offering {
	out := make([]Offering, 0, len(offers))
	for _, o := range offers {
		if !u.IsUnavailable(o.Key(c)) {
			out = append(out, o)
		}
	}
	return out
}

// Entries lists the live entries in key order.
func (u *Unavailable) Entries() []UnavailableEntry {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.set.Prune(u.now())
	out := []UnavailableEntry{}
	for _, k := range u.set {
		out = append(out, UnavailableEntry{Key: k.Key, Until: k.Until, Reason: u.reasons[k.Key]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key.String() < out[j].Key.String() })
	return out
}
