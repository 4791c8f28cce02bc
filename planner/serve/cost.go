package serve

// The roofline cost model of one pipeline (see the package comment). Times are seconds.

// collectiveLatency is the fixed cost of one tensor-parallel all-reduce, on top of its bytes
// over the link: the planner's per-message NVLink latency (10 µs), which is what dominates
// the small all-reduces of a decode step.
const collectiveLatency = 10e-6

// roof is the time of work with flops and bytes: whichever of compute and memory traffic
// takes longer.
func (l *layout) roof(flops, bytes float64) float64 {
	return max(flops/(l.peak*l.as.ComputeEfficiency), bytes/(l.bw*l.as.BandwidthEfficiency))
}

// allReduce is a ring all-reduce of bytes over the TP group.
func (l *layout) allReduce(bytes float64) float64 {
	if l.tp <= 1 {
		return 0
	}
	t := float64(l.tp)
	return collectiveLatency + l.intra.Time(2*(t-1)/t*bytes)
}

// hops is the time a message of bytes takes across every stage boundary of the pipeline.
func (l *layout) hops(bytes float64) float64 {
	if l.stages <= 1 {
		return 0
	}
	intra := l.stages - 1 - l.interHops
	return float64(intra)*l.intra.Time(bytes) + float64(l.interHops)*l.inter.Time(bytes)
}

// head is the output projection for rows tokens: its weights are read once.
func (l *layout) head(rows float64) float64 {
	return l.roof(2*rows*l.headParams, l.headParams*bytesPerValue)
}

// prefillStage is one stage's prefill of k prompts of p tokens: its blocks, then the logits
// of each prompt's last token (the fullest stage is taken to hold the head).
func (l *layout) prefillStage(k, p int) float64 {
	kf, pf, h := float64(k), float64(p), float64(l.arch.Hidden)
	tokens := kf * pf
	flops := 2*tokens*l.blockParams + 2*kf*pf*pf*h/float64(l.tp) // causal attention: half of 4·p²·h
	bytes := l.blockParams*bytesPerValue + tokens*l.kvTokenLayer + 2*tokens*h*bytesPerValue
	layer := l.roof(flops, bytes) + 2*l.allReduce(tokens*h*bytesPerValue)
	return float64(l.blocks)*layer + l.head(kf)
}

// prefill is the time from the first stage starting a batch of k prompts to the last stage
// finishing it: j = min(k, D) microbatches take (D + j − 1) stage steps.
func (l *layout) prefill(k, p int) float64 {
	j := min(k, l.stages)
	mb := (k + j - 1) / j
	steps := float64(l.stages + j - 1)
	return steps*l.prefillStage(mb, p) + l.hops(float64(mb*p*l.arch.Hidden*bytesPerValue))
}

// decodeStage is one stage's decode step for a microbatch of b sequences at context c: read
// the blocks' weights and the batch's KV, compute one token each, then the logits.
func (l *layout) decodeStage(b int, c float64) float64 {
	bf, h := float64(b), float64(l.arch.Hidden)
	flops := bf * (2*l.blockParams + 4*c*h/float64(l.tp))
	bytes := l.blockParams*bytesPerValue + bf*c*l.kvTokenLayer + 2*bf*h*bytesPerValue
	layer := l.roof(flops, bytes) + 2*l.allReduce(bf*h*bytesPerValue)
	return float64(l.blocks)*layer + l.head(bf)
}

// decodeIter is one decode iteration of the pipeline: one new token for each of n running
// sequences at context c, split into j = min(n, D) microbatches, each going round every
// stage; the sampled tokens return from the last stage to the first.
func (l *layout) decodeIter(n int, c float64) float64 {
	if n <= 0 {
		return 0
	}
	j := min(n, l.stages)
	mb := (n + j - 1) / j
	t := float64(l.stages)*l.decodeStage(mb, c) + l.hops(float64(mb*l.arch.Hidden*bytesPerValue))
	if l.stages > 1 {
		back := l.intra
		if l.interHops > 0 {
			back = l.inter
		}
		t += back.Time(float64(mb * 4))
	}
	return t
}

// kvTransfer is the exposed part of streaming a prompt's KV from a prompt worker to a token
// worker on another machine: each prompt stage streams its layers as it computes them, so
// only what outlasts the prefill, or at least the last layer's share, is left to wait for.
func (l *layout) kvTransfer(p int, prefill float64) float64 {
	bytes := float64(p) * float64(l.blocks) * l.kvTokenLayer * float64(l.tp)
	t := l.inter.Time(bytes)
	return max(t-prefill, t/float64(l.blocks))
}
