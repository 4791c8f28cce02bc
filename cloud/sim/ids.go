package sim

import (
	"fmt"
	"math/rand/v2"
)

// idSource names instances the way each cloud does, deterministically from the seed: EC2
// ids are "i-0" and 16 hex digits; GCE instances get a name chosen by the caller, for which
// the simulator uses "sim-gcp-" and a counter.
type idSource struct {
	aws  *rand.Rand
	gcp  int
	used map[string]bool
}

func newIDSource(seed int64) *idSource {
	return &idSource{aws: stream(seed, "instance-ids"), used: map[string]bool{}}
}

func (s *idSource) next(provider string) string {
	for {
		var id string
		if provider == "gcp" {
			s.gcp++
			id = fmt.Sprintf("sim-gcp-%06d", s.gcp)
		} else {
			id = fmt.Sprintf("i-0%016x", s.aws.Uint64())
		}
		if !s.used[id] {
			s.used[id] = true
			return id
		}
	}
}
