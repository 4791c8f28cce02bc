package servingwf

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/serving"
)

// poolsVersion gates the prefill pool (spec prefill_replicas). A run that began before it
// ignored the field, as its Spec had none: replayed, it still does.
const poolsVersion = "prompt-token-pools"

// admitPools decides, once per run, whether this run lays out a prefill pool: a spec that
// asks for one, in a run that began with this code.
func (d *dep) admitPools(ctx workflow.Context) {
	if d.spec.PrefillReplicas <= 0 && len(d.prefill) == 0 {
		return
	}
	d.pools = workflow.GetVersion(ctx, poolsVersion, workflow.DefaultVersion, 1) == 1
}

// addPrefill lays out the slots of prefill replicas up to n.
func (d *dep) addPrefill(n int) {
	for p := d.prefillReplicas(); p < n; p++ {
		for s := range d.depth() {
			d.prefill = append(d.prefill, &slot{pool: serving.PoolPrefill, replica: p, stage: s})
		}
	}
}

// prefillReplicas is the number of prefill replicas laid out.
func (d *dep) prefillReplicas() int {
	if d.depth() == 0 {
		return 0
	}
	return len(d.prefill) / d.depth()
}

// all is every slot: the decode (or colocated) replicas', then the prefill replicas'.
func (d *dep) all() []*slot {
	if len(d.prefill) == 0 {
		return d.slots
	}
	out := make([]*slot, 0, len(d.slots)+len(d.prefill))
	return append(append(out, d.slots...), d.prefill...)
}

// slotOf is slot (replica, stage) of a pool, nil when there is none.
func (d *dep) slotOf(pool string, replica, stage int) *slot {
	if pool != serving.PoolPrefill {
		return d.slotAt(replica, stage)
	}
	if replica < 0 || stage < 0 || stage >= d.depth() || replica >= d.prefillReplicas() {
		return nil
	}
	return d.prefill[replica*d.depth()+stage]
}

// feeds is the decode replica prefill replica p streams its prompts to.
func (d *dep) feeds(p int) int { return serving.Feeds(p, d.replicas()) }

// holderSlot is the slot on whose node the holder that s replicates to runs: for a decode
// slot its ring successor; for a prefill slot the ring successor of the same stage of the
// decode replica it feeds, so the prompt's KV lands where that decode stage restores from.
func (d *dep) holderSlot(s *slot) *slot {
	if s.pool != serving.PoolPrefill {
		return d.next(s)
	}
	h := serving.PrefillHolder(s.key(), d.replicas(), d.depth())
	return d.slotAt(h.Replica, h.Stage)
}

// prefillPipelines are the stages query's entries of the prefill replicas (pools.go in
// package serving: a stage's Holder is the one its predecessor streams prompts to).
func (d *dep) prefillPipelines() []serving.ReplicaStages {
	var out []serving.ReplicaStages
	for p := range d.prefillReplicas() {
		rs := serving.ReplicaStages{Pool: serving.PoolPrefill, Replica: p, Feeds: d.feeds(p), Ready: true}
		for st := range d.depth() {
			s := d.slotOf(serving.PoolPrefill, p, st)
			a := serving.StageAddr{Stage: st, Ready: s.state == serving.StateReady, Moving: s.standby != nil}
			if a.Ready {
				a.Addr, a.Node = s.workerAddr, s.inst.ID
				if h := d.slotAt(rs.Feeds, st); h != nil && h.state == serving.StateReady {
					a.Holder = h.holderAddr
				}
			}
			rs.Ready = rs.Ready && a.Ready
			rs.Stages = append(rs.Stages, a)
		}
		out = append(out, rs)
	}
	return out
}

// key is the slot as placement names it.
func (s *slot) key() serving.Slot {
	return serving.Slot{Pool: s.pool, Replica: s.replica, Stage: s.stage}
}

// name is the slot for people: "replica 0 stage 1", "prefill replica 0 stage 1".
func (s *slot) name() string {
	if s.pool == serving.PoolPrefill {
		return fmt.Sprintf("prefill replica %d stage %d", s.replica, s.stage)
	}
	return fmt.Sprintf("replica %d stage %d", s.replica, s.stage)
}
