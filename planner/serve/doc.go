// Package serve plans an LLM serving deployment: for a model, a Poisson arrival rate, prompt
// and output lengths and latency targets (p99 time to first token, TTFT, and p99 time per
// output token, TPOT), it picks the cheapest configuration on the GPUs on offer that meets
// the targets — GPU type and instance shape, pipeline depth and tensor parallelism, replica
// counts, prompt and token work colocated on one pool or disaggregated into two
// (DéjàVu-style), spot or on-demand per pool, and the zones to buy in.
//
// It is the training planner's sibling: the same Architecture and datasheets
// (planner.Spec), the same network links (planner.Network), the same cloud offerings. It does
// no I/O and knows nothing of Temporal.
//
// # How a configuration is estimated
//
// Nothing here was measured on the configurations it ranks: every number comes from a
// roofline over the GPU's datasheet (cost.go) and a queueing model, first a closed form to
// prune (analytic.go), then a seeded discrete-event simulation of the best few (sim.go).
//
//   - Prefill of k prompts of P tokens, per layer: max(FLOPs/(peak·ComputeEfficiency),
//     bytes/(bandwidth·BandwidthEfficiency)), FLOPs = 2·params·k·P + 2·k·P²·hidden (causal
//     attention), bytes = the layer's weights, the KV written and the activations in and out.
//   - A decode step per layer for a batch of b at context c: max(FLOPs, (weights + KV read
//     of b·c tokens)/bandwidth), so it is bandwidth-bound at small batches and approaches the
//     compute roofline at large ones (at short context).
//   - Tensor parallelism splits FLOPs and bytes and adds two all-reduces per layer over the
//     machine's link; pipeline stages add a hop per stage boundary (NVLink/PCIe inside a
//     machine, the network between machines).
//   - KV bytes per token = 2 (K and V) · layers · KV heads · head dim · 2 bytes (bf16).
//   - Memory: MemoryUtilization of the GPU, less the stage's weights and an activation
//     workspace, holds the KV caches; that decides the largest batch.
//   - A pipeline of D stages keeps up to D microbatches in flight: a decode iteration (one
//     token for every running sequence) takes D stage steps of the per-microbatch batch;
//     a prefill of k prompts in j = min(k, D) microbatches takes (D + j − 1) stage steps,
//     so a prompt in a colocated pipeline stalls every token microbatch behind it — the
//     bubble DéjàVu's disaggregation removes.
//   - Disaggregated pools stream the prompt's KV to a token worker layer by layer as the
//     prefill computes it (DéjàVu); the exposed part of the transfer delays the second
//     token, and prompt time is scaled by StreamOverhead. The token pool's size starts from
//     DéjàVu's D_t = D·N·t / (m·Y + N·t) (dejavu.go) and is then checked.
//
// The estimates are held against measurements in cost_test.go: dejavu.md's H200 probe (5.9 B
// Llama-style, bf16: prefill of batch 8 × 2048 tokens 415 ms, KV 128 KiB per token, a 2.8 ms
// weight-read floor per decode step) within a stated factor of 1.5, and this repository's
// worker on the H200 (BENCHMARKS.md), whose prefill of 8k tokens or more agrees as closely and
// whose decode steps are 2–11× slower than the roofline: a decode estimate is what a
// bandwidth-efficient engine reaches, a lower bound. The efficiencies are assumptions,
// stated in Assumptions, not fitted to either.
package serve
