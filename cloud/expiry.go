package cloud

import (
	"slices"
	"time"
)

// ExpiringKey is an offering key remembered until Until; a key with only Zone set stands for
// the whole zone.
type ExpiringKey struct {
	Key   OfferingKey `json:"key"`
	Until time.Time   `json:"until"`
}

// ExpirySet is a set of offering keys that expire, as a plain value with the clock passed in:
// deterministic, so a workflow can keep one in its state and carry it across continue-as-new,
// and Unavailable wraps one for concurrent use on a real clock. It is the single
// implementation of "leave this offering (or zone) out for a while".
type ExpirySet []ExpiringKey

// Add remembers key until until; a key already there keeps the later expiry.
func (s *ExpirySet) Add(key OfferingKey, until time.Time) {
	for i := range *s {
		if (*s)[i].Key == key {
			if until.After((*s)[i].Until) {
				(*s)[i].Until = until
			}
			return
		}
	}
	*s = append(*s, ExpiringKey{Key: key, Until: until})
}

// Prune drops the entries expired at now.
func (s *ExpirySet) Prune(now time.Time) {
	*s = slices.DeleteFunc(*s, func(k ExpiringKey) bool { return !now.Before(k.Until) })
}

// Has reports whether key is remembered and not expired at now.
func (s ExpirySet) Has(key OfferingKey, now time.Time) bool {
	return slices.ContainsFunc(s, func(k ExpiringKey) bool { return k.Key == key && now.Before(k.Until) })
}

// HasZone reports whether a whole-zone entry for zone is live at now.
func (s ExpirySet) HasZone(zone string, now time.Time) bool {
	return s.Has(OfferingKey{Zone: zone}, now)
}
