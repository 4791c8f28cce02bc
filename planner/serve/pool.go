package serve

import "math"

// Role is the work a pool does.
type Role string

const (
	// RoleBoth: a colocated pool prefills prompts and decodes tokens on the same replicas.
	RoleBoth Role = "prompt+token"
	// RolePrompt: a disaggregated prompt pool prefills and streams the KV cache onwards.
	RolePrompt Role = "prompt"
	// RoleToken: a disaggregated token pool decodes requests whose KV it was streamed.
	RoleToken Role = "token"
)

// poolModel is one replica of a pool as the queueing models see it: how long a prefill of k
// prompts and a decode iteration of n sequences take, and how many of each fit.
type poolModel struct {
	l    layout
	role Role
	// prompt and output are the request's lengths; ctx the mean context of a decode step
	// (prompt plus half the output).
	prompt, output int
	ctx            float64
	// maxBatch is the sequences a replica decodes at once (0 for a prompt pool);
	// prefillCap the prompts one prefill batch holds (0 for a token pool).
	maxBatch, prefillCap int
	// transfer is a prompt pool's exposed KV transfer to the token pool.
	transfer float64
}

// newPool sizes one replica of l for role; false when not one request fits.
func newPool(l layout, role Role, prompt, output int) (poolModel, bool) {
	p := poolModel{l: l, role: role, prompt: prompt, output: output, ctx: float64(prompt) + float64(output)/2}
	budget := l.prefillBatchCap(prompt)
	switch role {
	case RoleBoth:
		p.maxBatch = l.maxSequences(prompt+output, budget*prompt)
		p.prefillCap = min(budget, p.maxBatch)
	case RolePrompt:
		room := l.kvRoom(budget * prompt)
		if room > 0 {
			p.prefillCap = int(min(float64(budget), math.Floor(room/l.kvPerSequence(prompt))))
		}
		if p.prefillCap >= 1 {
			p.transfer = l.kvTransfer(prompt, l.prefillStage(1, prompt))
		}
	case RoleToken:
		p.maxBatch = l.maxSequences(prompt+output, l.as.MaxBatchPerStage)
	}
	ok := (role == RoleToken || p.prefillCap >= 1) && (role == RolePrompt || p.maxBatch >= 1)
	return p, ok
}

// prefill is the time of a batch of k prompts; a prompt pool's is lengthened by streaming.
func (p *poolModel) prefill(k int) float64 {
	t := p.l.prefill(k, p.prompt)
	if p.role == RolePrompt {
		t *= p.l.as.StreamOverhead
	}
	return t
}

// prefillPerRequest is the prefill time per prompt in a full batch: the cheapest a prompt
// gets.
func (p *poolModel) prefillPerRequest() float64 {
	return p.prefill(p.prefillCap) / float64(p.prefillCap)
}

// decode is one decode iteration of n sequences.
func (p *poolModel) decode(n int) float64 { return p.l.decodeIter(n, p.ctx) }

// batchAt is the largest batch whose decode iteration takes at most tpot (at least 1).
func (p *poolModel) batchAt(tpot float64) int {
	lo, hi := 1, p.maxBatch
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if p.decode(mid) <= tpot {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// gpus is one replica's GPUs.
func (p *poolModel) gpus() int { return p.l.gpus() }
