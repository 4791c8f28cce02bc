package serve

import "math"

// Memory fit. A GPU gives MemoryUtilization of its memory to the serving engine; the fullest
// stage's weights and the activation workspace of the largest forward pass come off it, and
// what is left holds KV caches. The largest batch is what that holds at the sequences' full
// context (prompt plus output), since a sequence admitted must be able to finish.

// workspace is the live activations of a forward pass over tokens rows on one GPU: the
// block's input, residual and attention output (3·hidden) and the MLP's inner activations
// (gate and up for a gated MLP), bf16.
func (l *layout) workspace(tokens int) float64 {
	mlp := 1.0
	if l.arch.GatedMLP {
		mlp = 2
	}
	width := 3*float64(l.arch.Hidden) + mlp*float64(l.arch.FFN)/float64(l.tp)
	return float64(tokens) * width * bytesPerValue
}

// kvRoom is the bytes per GPU left for KV caches when a forward pass may hold
// workspaceTokens rows; negative when the weights alone do not fit.
func (l *layout) kvRoom(workspaceTokens int) float64 {
	return l.as.MemoryUtilization*l.spec.MemoryBytes - l.stageWeightBytes - l.workspace(workspaceTokens)
}

// kvPerSequence is one sequence's KV cache at ctx tokens on the fullest stage's GPU.
func (l *layout) kvPerSequence(ctx int) float64 {
	return float64(ctx) * float64(l.blocks) * l.kvTokenLayer
}

// maxSequences is how many sequences of ctx tokens one replica holds at once (all its
// microbatches; every stage holds every sequence's KV for its own layers), capped at
// MaxBatchPerStage per microbatch; 0 when not one fits.
func (l *layout) maxSequences(ctx, workspaceTokens int) int {
	room := l.kvRoom(workspaceTokens)
	if room <= 0 {
		return 0
	}
	n := math.Floor(room / l.kvPerSequence(ctx))
	return int(min(n, float64(l.as.MaxBatchPerStage*l.stages)))
}

// prefillBatchCap is how many prompts of p tokens one prefill batch may hold under the
// token budget (at least one).
func (l *layout) prefillBatchCap(p int) int {
	return max(1, l.as.PrefillTokenBudget/p)
}
