package servingwf

import (
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/workflows/internal/jobwf"
)

// dep is one ServingDeployment run's state. Everything a decision reads is here and changes
// only in workflow code, so replay rebuilds it exactly; maps are only looked up, never
// iterated.
type dep struct {
	in   serving.DeployInput
	opts serving.DeployOptions
	spec serving.Spec
	id   string
	// scale is the provider's time scale (resolved by admit).
	scale  cloud.TimeScale
	layers []serving.LayerRange

	status serving.Status
	// slots are the (replica, stage) pairs, in replica-then-stage order: slot r*depth+s.
	slots []*slot
	// prefill are the prefill replicas' slots (spec prefill_replicas), laid out the same way;
	// pools says this run has them (poolsVersion).
	prefill []*slot
	pools   bool
	// held are every instance held (stages and standbys), in acquisition order.
	held    []cloud.Instance
	odPrice map[string]float64
	// runs are the RunStage activities not yet ended (current and retired ones).
	runs        []*stageRun
	unavailable cloud.ExpirySet
	avoided     cloud.ExpirySet
	fleets      int
	// short is set while some slot lacks a machine and placement or acquisition came up
	// short; nextTry is when to try again.
	short   bool
	nextTry time.Time
	// nextSpotCheck is when stages on on-demand fallback machines next look for spot room.
	nextSpotCheck time.Time
	// version of the stages query's answer.
	version int
	served  bool

	// Requests from update handlers, acted on by the main loop.
	wake          workflow.Channel
	wantReplicas  int
	stopRequested bool
	stopReason    string
	stopped       bool
	finished      bool

	meter jobwf.Meter
	// meterFromBoot: the held machines' states follow every describe, and accrue counts only
	// those the provider bills (jobwf.Billed): runs recorded with versionMeterFromBoot.
	meterFromBoot bool
	events        int
	pub           jobwf.Publisher
}

// slot is one (replica, stage): the machine it runs on, its RunStage, and the failover in
// progress, if any.
type slot struct {
	pool           string // serving.PoolPrefill or empty (decode)
	replica, stage int
	inst           cloud.Instance // ID "" while none is assigned
	state          string         // "", starting, ready, lost
	workerAddr     string
	holderAddr     string
	run            *stageRun
	// restore: the next start is a replacement or a restart (the worker restores its KV
	// cache); adopt: the next start re-attaches after continue-as-new.
	restore bool
	adopt   bool
	// restarts counts failures on a live machine since the stage was last ready.
	restarts int
	// served: the stage has been ready once, so losing it is a failover.
	served bool
	// noticedAt is when a preemption notice for inst came (zero: none); standby is the
	// machine the stage migrates to ahead of it.
	noticedAt time.Time
	// reclaimAt is the notice's wall-time deadline (zero: the notice gave none, or it was
	// read from the provider's description, whose clock is the provider's): it bounds the
	// standby's preload (standbyPreload).
	reclaimAt time.Time
	standby   *standby
	// toSpot: the stage runs on an on-demand fallback machine and moves back to spot (a
	// standby on spot, switched to as after a notice; not a failover).
	toSpot bool
	// fo is the failover in progress; downSince when the stage stopped being ready.
	fo        *serving.Failover
	downSince time.Time
}

// standby is the replacement brought up for a noticed machine.
type standby struct {
	inst cloud.Instance
	run  *stageRun
}

// stageRun is one RunStage activity.
type stageRun struct {
	jobwf.Run[serving.StageResult]
	slot       *slot
	epoch      int
	instanceID string
	cancel     workflow.CancelFunc
	startedAt  time.Time
	standby    bool
	// retired: cancelled on purpose (replaced, scaled away, stopped); its end means nothing,
	// but for releaseAtEnd: the machine a stage migrated off, released once this run ended.
	retired      bool
	releaseAtEnd string
}

// newDep builds the state of a fresh start or of a run continued as new.
func newDep(ctx workflow.Context, in serving.DeployInput) *dep {
	now := workflow.Now(ctx)
	d := &dep{in: in, opts: in.Options.WithDefaults(), spec: in.Spec, id: workflow.GetInfo(ctx).WorkflowExecution.ID,
		odPrice: map[string]float64{}, wake: workflow.NewBufferedChannel(ctx, 64), meter: jobwf.Meter{Last: now}}
	d.status = serving.Status{DeploymentID: d.id, Name: in.Spec.Name, Model: in.Spec.ModelID(), Phase: serving.PhasePlanning,
		StartedAt: now, UpdatedAt: now}
	d.meterFromBoot = workflow.GetVersion(ctx, versionMeterFromBoot, workflow.DefaultVersion, 1) == 1
	if c := in.Carried; c != nil {
		d.status = c.Status
		d.status.DeploymentID = d.id
		d.held = append(d.held, c.Instances...)
		for _, in := range c.Instances {
			if p, ok := c.OnDemandPrices[in.ID]; ok {
				d.odPrice[in.ID] = p
			}
		}
		d.unavailable, d.avoided, d.scale, d.fleets = c.Unavailable, c.Avoided, c.TimeScale, c.Fleets
		d.served = true
		for _, cs := range c.Slots {
			s := &slot{pool: cs.Pool, replica: cs.Replica, stage: cs.Stage, state: cs.State, workerAddr: cs.WorkerAddr, holderAddr: cs.HolderAddr,
				noticedAt: cs.NoticedAt, reclaimAt: cs.ReclaimAt, restore: true, served: true}
			if inst, ok := d.heldInstance(cs.InstanceID); ok {
				s.inst = inst
				s.adopt = s.state == serving.StateReady
			}
			if s.inst.ID == "" {
				s.state = serving.StateLost
			}
			if s.pool == serving.PoolPrefill {
				d.prefill = append(d.prefill, s)
			} else {
				d.slots = append(d.slots, s)
			}
		}
		d.version = 1
	}
	return d
}

// depth is the pipeline's number of stages.
func (d *dep) depth() int { return d.spec.Stages }

// replicas is the number of replicas laid out.
func (d *dep) replicas() int {
	if d.depth() == 0 {
		return 0
	}
	return len(d.slots) / d.depth()
}

// slotAt is slot (replica, stage), nil when there is none.
func (d *dep) slotAt(replica, stage int) *slot {
	if replica < 0 || stage < 0 || stage >= d.depth() || replica >= d.replicas() {
		return nil
	}
	return d.slots[replica*d.depth()+stage]
}

// next is the stage after s in its replica's ring: (stage+1) mod depth.
func (d *dep) next(s *slot) *slot { return d.slotOf(s.pool, s.replica, (s.stage+1)%d.depth()) }

// addReplicas lays out the slots of replicas up to n.
func (d *dep) addReplicas(n int) {
	for r := d.replicas(); r < n; r++ {
		for s := range d.depth() {
			d.slots = append(d.slots, &slot{replica: r, stage: s})
		}
	}
}

// heldInstance finds a held instance by id.
func (d *dep) heldInstance(id string) (cloud.Instance, bool) {
	if id == "" {
		return cloud.Instance{}, false
	}
	for _, in := range d.held {
		if in.ID == id {
			return in, true
		}
	}
	return cloud.Instance{}, false
}

// drop forgets held instances (after their release).
func (d *dep) drop(ids ...string) {
	d.held = slices.DeleteFunc(d.held, func(in cloud.Instance) bool { return slices.Contains(ids, in.ID) })
}

// accrue adds the cost of holding the instances since the last event: price × the
// provider's hours, and the same holding at on-demand prices for the comparison. Once the
// deployment follows its machines' states (meterFromBoot), a machine still booting or said
// gone is not counted: the clouds bill from running, and counting every machine from its
// acquisition put the reported cost 2.1% above the simulated market's bill on a median day
// (21 machines' two minutes of boot; BENCHMARKS.md, "Serving on spot").
func (d *dep) accrue(now time.Time) {
	held := d.held
	if d.meterFromBoot {
		held = jobwf.Billed(d.held, true)
	}
	d.meter.Accrue(now, d.scale, held, d.odPrice, &d.status.CostUSD, &d.status.OnDemandCostUSD)
}

// versionMeterFromBoot: the held machines' states follow every describe and the meter counts
// only the billed ones; runs recorded before counted every held machine from its acquisition
// to its release.
const versionMeterFromBoot = "serving-meter-from-boot"

// noteDescribed takes the prices, and the states, a describe gave for the held machines; what
// was held until now is counted at the prices and states it had.
func (d *dep) noteDescribed(ctx workflow.Context, got []cloud.Instance) {
	if workflow.GetVersion(ctx, jobwf.VersionMeterCurrentPrice, workflow.DefaultVersion, 1) != 1 {
		return
	}
	d.accrue(workflow.Now(ctx))
	jobwf.TakeDescribedPrices(d.held, got)
	if d.meterFromBoot {
		jobwf.TakeDescribedStates(d.held, got)
	}
}

// refresh recomputes the derived fields of the status.
func (d *dep) refresh(now time.Time) {
	d.status.GPUs, d.status.USDPerHour = 0, 0
	d.status.Instances, d.status.Zones = []string{}, []string{}
	for _, in := range d.held {
		d.status.GPUs += max(in.GPUs, 1)
		d.status.USDPerHour += in.PricePerHour
		d.status.Instances = append(d.status.Instances, in.ID)
		d.status.Zones = append(d.status.Zones, in.Zone)
	}
	slices.Sort(d.status.Zones)
	d.status.Zones = slices.Compact(d.status.Zones)
	d.status.Replicas = d.wantReplicas
	d.status.Depth = d.depth()
	d.status.PrefillReplicas = d.prefillReplicas()
	d.status.Stages = make([]serving.StageStatus, 0, len(d.slots)+len(d.prefill))
	for _, s := range d.all() {
		st := serving.StageStatus{Pool: s.pool, Replica: s.replica, Stage: s.stage, InstanceID: s.inst.ID, Zone: s.inst.Zone, Capacity: s.inst.Capacity,
			WorkerAddr: s.workerAddr, HolderAddr: s.holderAddr, State: s.state, NoticedAt: s.noticedAt,
			ReclaimAt: s.reclaimAt}
		if s.stage < len(d.layers) {
			st.Layers = d.layers[s.stage]
		}
		if s.run != nil {
			st.Epoch = s.run.epoch
		}
		if s.standby != nil {
			st.Standby = s.standby.inst.ID
		}
		d.status.Stages = append(d.status.Stages, st)
	}
	d.status.UpdatedAt = now
}

// event accounts for time passing, refreshes the status and tells the UI.
func (d *dep) event(ctx workflow.Context, what string) {
	now := workflow.Now(ctx)
	d.accrue(now)
	d.refresh(now)
	d.events++
	if what != "" {
		workflow.GetLogger(ctx).Info("deployment event", "deployment", d.id, "event", what)
	}
	d.publish(ctx)
}

// setPhase changes the phase and records it as an event.
func (d *dep) setPhase(ctx workflow.Context, phase string) {
	if d.status.Phase == phase {
		return
	}
	d.status.Phase = phase
	d.version++
	d.event(ctx, "phase "+phase)
}

// snapshot is a copy of the status safe to hand out.
func (d *dep) snapshot() serving.Status {
	s := d.status
	s.Stages = slices.Clone(d.status.Stages)
	s.FailoverRecords = slices.Clone(d.status.FailoverRecords)
	s.Zones = slices.Clone(d.status.Zones)
	s.Instances = slices.Clone(d.status.Instances)
	return s
}

// pipeline is the stages query's answer.
func (d *dep) pipeline() serving.Pipeline {
	p := serving.Pipeline{Deployment: d.id, Model: d.spec.ModelID(), Phase: d.status.Phase, Version: d.version,
		Replicas: []serving.ReplicaStages{}}
	for r := range d.replicas() {
		rs := serving.ReplicaStages{Replica: r, Ready: true}
		for st := range d.depth() {
			s := d.slotAt(r, st)
			a := serving.StageAddr{Stage: st, Ready: s.state == serving.StateReady, Moving: s.standby != nil}
			if a.Ready {
				a.Addr, a.Node, a.Holder = s.workerAddr, s.inst.ID, s.holderAddr
			}
			rs.Ready = rs.Ready && a.Ready
			rs.Stages = append(rs.Stages, a)
		}
		p.Replicas = append(p.Replicas, rs)
	}
	p.Replicas = append(p.Replicas, d.prefillPipelines()...)
	return p
}
