package cluster

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/schooner-ml/schooner/cloud"
)

// nodeAgents plays the machines of the simulated market: as a real instance boots its node
// agent, every instance the market lists (read through its EC2 face, as any client would) gets
// a `schooner worker node --node-id <instance id>` process, and when the instance is preempted
// or terminated that process is SIGKILLed, as a machine that vanished. A node agent run apart
// from the market hears no preemption notice (the simulated agents of `schooner dev` get them
// from the market in-process): its job hears of it through the control workers' SQS relay, and
// its trainers take no emergency checkpoint, so the job resumes from its last periodic one.
type nodeAgents struct {
	c *cluster

	mu     sync.Mutex
	agents map[string]*nodeAgent // by instance id, while the instance lives
	booted int                   // agents started for new instances
	lost   int                   // agents killed because their instance ended
	// respawned counts agents that exited by themselves (one that starts while the server is
	// down cannot connect) and were started again, as a service manager would.
	respawned int
	err       error // the last failure to list or start, for a stuck test's message
}

// nodeAgent is the agent process of one live instance.
type nodeAgent struct {
	inst cloud.Instance
	p    *proc
	// restarting is set while a fault has killed the agent and not yet restarted it.
	restarting bool
}

func newNodeAgents(c *cluster) *nodeAgents {
	return &nodeAgents{c: c, agents: map[string]*nodeAgent{}}
}

// follow lists the market's instances every interval until ctx ends, booting and killing
// agents to match.
func (n *nodeAgents) follow(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		live, err := n.c.cloud.List(lctx, nil)
		cancel()
		if err == nil {
			n.sync(live)
		} else if ctx.Err() == nil {
			n.setErr(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sync starts an agent for every pending or running instance without one and kills the agent
// of every instance gone or going.
func (n *nodeAgents) sync(live []cloud.Instance) {
	alive := map[string]cloud.Instance{}
	for _, inst := range live {
		if inst.State == cloud.StatePending || inst.State == cloud.StateRunning {
			alive[inst.ID] = inst
		}
	}
	n.mu.Lock()
	var dead []*nodeAgent
	for id, a := range n.agents {
		if _, ok := alive[id]; !ok {
			dead = append(dead, a)
			delete(n.agents, id)
			n.lost++
		}
	}
	var boot []*nodeAgent
	for id, inst := range alive {
		if a := n.agents[id]; a != nil {
			a.inst = inst
			if !a.restarting && a.p.unexpectedExit() != "" {
				boot = append(boot, a)
				n.respawned++
			}
			continue
		}
		a := &nodeAgent{inst: inst, p: n.c.newProc("node-"+id, "worker", "node", "--address", n.c.temporal,
			"--node-id", id, "--data-dir", filepath.Join(n.c.dir, "nodes", id), "--store-root", n.c.dir,
			// Notices from the machine's own metadata, as on EC2 (the market's IMDS face).
			"--imds-endpoint", "http://"+n.c.ec2+"/imds/"+id)}
		n.agents[id] = a
		boot = append(boot, a)
		n.booted++
	}
	n.mu.Unlock()
	for _, a := range dead {
		a.p.kill()
	}
	for _, a := range boot {
		if err := a.p.start(); err != nil {
			n.setErr(err)
		}
	}
}

// killOne SIGKILLs the agent of one running instance of a job, chosen with rng, while the
// instance keeps running (a crashed agent, not a lost machine), and returns its instance id
// and a function that starts the agent again, as the machine's service manager would.
func (n *nodeAgents) killOne(rng *rand.Rand) (id string, restart func() error, ok bool) {
	n.mu.Lock()
	var ids []string
	for id, a := range n.agents {
		if a.inst.State == cloud.StateRunning && a.inst.JobID != "" && !a.restarting {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		n.mu.Unlock()
		return "", nil, false
	}
	slices.Sort(ids) // map order is random; the seed alone must decide
	id = ids[rng.IntN(len(ids))]
	a := n.agents[id]
	a.restarting = true
	n.mu.Unlock()
	a.p.kill()
	return id, func() error {
		err := n.c.restart(a.p, "node agent running", 30*time.Second)
		n.mu.Lock()
		a.restarting = false
		gone := n.agents[id] != a
		n.mu.Unlock()
		if gone {
			// The instance ended meanwhile and sync has already killed this agent once.
			a.p.kill()
			return nil
		}
		return err
	}, true
}

// counts says how many agents were booted, how many died with their instance and how many
// were started again after exiting by themselves.
func (n *nodeAgents) counts() (booted, lost, respawned int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.booted, n.lost, n.respawned
}

// lastErr is the last failure to list the instances or start an agent, or nil.
func (n *nodeAgents) lastErr() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

func (n *nodeAgents) setErr(err error) {
	n.mu.Lock()
	n.err = err
	n.mu.Unlock()
}
