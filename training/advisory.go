package training

// Advisories are what a valid spec does that its author may not expect: not errors (the job
// runs as written), but said before money is spent. `schooner train submit` prints them.
func (s Spec) Advisories() []string {
	var out []string
	if s.Spot == SpotWithFallback && s.Deadline == "" {
		// The fallback keeps a deadline (the deadline policy buys on-demand GPUs only when spot
		// cannot finish in time); with none there is nothing to keep, and the job waits for
		// spot capacity as `spot` would.
		out = append(out, "spot: spot-with-fallback without a deadline buys no on-demand capacity: it falls back only to keep a deadline, "+
			"so this job waits for spot as `spot: spot` would (add `deadline:` to have it fall back)")
	}
	return out
}
