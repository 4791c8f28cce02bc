package serving

import (
	"fmt"

	"github.com/schooner-ml/schooner/internal/specfile"
)

// Prompt–token disaggregation (DéjàVu; vLLM's disaggregated prefill, Dynamo's prefill and
// decode workers). A spec with PrefillReplicas runs two pools of pipelines of the same depth:
// prefill replicas compute each prompt's KV cache and token 0, and stream that cache, layer by
// layer as it is computed, to KV-cache holders; decode replicas restore it from there (the
// failover restore) and generate the rest. The transfer goes through the holders the decode
// replica's own stages replicate to, so prefill replica p's stage i streams to the holder its
// decode replica's stage i restores from (the one on the node of that replica's stage i+1): the
// holder keys a replica by (deployment, stage, request), and the decode stage finds the
// prompt where it would find its own cache after a failover, and goes on replicating there.
// docs/serving.md, "Prompt–token disaggregation".

// Pools of a deployment's replicas, as StageAssignment, StageReady, the status and the stages
// query name them. The decode pool's name is empty, so a colocated deployment's replicas, and
// every record written before pools existed, read as they did.
const (
	PoolDecode  = ""
	PoolPrefill = "prefill"
)

// Feeds is the decode replica that prefill replica p streams its prompts to, with decode
// replicas laid out: prefill replicas are dealt round-robin, so every decode replica has
// one while there are at least as many prefill replicas, and a decode replica without one
// prefills its own requests.
func Feeds(p, decode int) int {
	if decode <= 0 {
		return 0
	}
	return p % decode
}

// PrefillHolder is the decode slot on whose machine the holder that prefill slot s streams
// its prompts' KV caches to runs: the ring successor of the same stage of the decode replica
// s feeds, since that holder is where that decode stage restores from.
func PrefillHolder(s Slot, decodeReplicas, depth int) Slot {
	return Slot{Pool: PoolDecode, Replica: Feeds(s.Replica, decodeReplicas), Stage: (s.Stage + 1) % max(depth, 1)}
}

// Disaggregated says whether the spec asks for a prefill pool.
func (s Spec) Disaggregated() bool { return s.PrefillReplicas > 0 }

// checkPools: a prefill pool needs KV replication (the prompt's cache reaches the decode
// replica through the holders that replication writes to), and a bounded size. Both pools
// share `stages`, so their depths are the same by construction: the holder keys a replica by
// stage, and a decode stage can only restore what a prefill stage of the same layers sent.
func checkPools(c *specfile.Collector, s Spec) {
	for _, p := range PrefillReplicasProblems(s.PrefillReplicas, s.KVReplication) {
		c.Add("prefill_replicas", "%s", p)
	}
}

// PrefillReplicasProblems is what is wrong with n prefill replicas in a deployment whose
// kv_replication is kvReplication (none: nothing): the spec's validation and the scale
// update's (which may add a prefill pool to a running deployment) ask the same.
func PrefillReplicasProblems(n int, kvReplication string) []string {
	var out []string
	if n < 0 || n > MaxReplicas {
		out = append(out, fmt.Sprintf("must be between 0 and %d (got %d)", MaxReplicas, n))
	}
	if n > 0 && kvReplication == ReplicationOff {
		out = append(out, "needs kv_replication on: the prompt's KV cache reaches the decode replicas through the KV-cache holders replication writes to")
	}
	return out
}
