package sim

import (
	"hash/fnv"
	"math/rand/v2"
)

// stream returns a random source for one purpose, derived from the seed and the purpose's
// name. Each offering's capacity and price walk gets its own stream, so what one offering
// draws never depends on what happened elsewhere or on the order of API calls: the market
// stays reproducible when callers interleave differently.
func stream(seed int64, purpose ...string) *rand.Rand {
	h := fnv.New64a()
	for _, p := range purpose {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}
