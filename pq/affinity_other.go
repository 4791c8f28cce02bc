//go:build !linux

package pq

// allowedCPUs: affinity is not implemented off Linux; servers run unpinned.
func allowedCPUs() []int { return nil }

func pin(int) error { return nil }
