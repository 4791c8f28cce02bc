package serve

// TokenPoolSize is DéjàVu's split of D machines between prompt and token work:
//
//	D_t = D·N·t / (m·Y + N·t)
//
// with N the tokens generated per request, t the time per token, Y the prompt's time and m
// the streaming overhead factor. It gives each pool GPUs in proportion to the time its work
// takes, so that neither waits on the other. The planner reads Y and t per request on one
// replica of each pool, weighted by that replica's GPUs (GPU-seconds per request), which is
// the formula's balance when the two pools' replicas differ in size.
func TokenPoolSize(d, n, t, y, m float64) float64 {
	if d <= 0 || n*t <= 0 {
		return 0
	}
	return d * n * t / (m*y + n*t)
}

// dejavuTerms are the formula's N, t, Y and m for a prompt and a token pool: Y is the
// prompt pool's GPU-seconds per request (without streaming, which m adds) and t the token
// pool's GPU-seconds per token per request at the largest batch within the TPOT target.
func dejavuTerms(prompt, token *poolModel, tpot float64) (n, t, y, m float64) {
	m = prompt.l.as.StreamOverhead
	y = prompt.prefillPerRequest() * float64(prompt.gpus()) / m
	b := token.batchAt(tpot)
	t = token.decode(b) / float64(b) * float64(token.gpus())
	return float64(token.output - 1), t, y, m
}

// tokenShareStart is where the token pool's replica search starts: DéjàVu's D_t for a total
// that gives the prompt pool the GPUs it was found to need, in token replicas.
func tokenShareStart(prompt, token *poolModel, promptReplicas int, tpot float64) int {
	n, t, y, m := dejavuTerms(prompt, token, tpot)
	share := TokenPoolSize(1, n, t, y, m)
	if share >= 1 {
		return 1
	}
	total := float64(promptReplicas*prompt.gpus()) / (1 - share)
	return max(1, int(total*share/float64(token.gpus())+0.5))
}
