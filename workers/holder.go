package workers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/schooner-ml/schooner/activities/colocationact"
	"github.com/schooner-ml/schooner/activities/interferenceact"
	"github.com/schooner-ml/schooner/activities/servingact"
	"github.com/schooner-ml/schooner/activities/trainingact"
	"github.com/schooner-ml/schooner/gpu/interference/fake"
	"github.com/schooner-ml/schooner/kvcache"
	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/serving/stage"
	"github.com/schooner-ml/schooner/taskqueue"
)

// SimHolderBudget is the KV-cache budget of a simulated node's holder (a bound, not an
// allocation: many simulated nodes share one machine).
const SimHolderBudget = 4 << 30

// DefaultHolderBudget is a real node's KV-cache budget when none is configured: a quarter of
// the machine's memory, 4 GiB when that is unknown.
func DefaultHolderBudget() int64 {
	if total := memTotal(); total > 0 {
		return total / 4
	}
	return 4 << 30
}

// memTotal reads MemTotal from /proc/meminfo (0 when unknown).
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// HolderOptions configure a node's KV-cache holder.
type HolderOptions struct {
	// Listen is its TCP address (127.0.0.1:0 when empty). Advertise is the host:port others
	// dial (the listener's address when empty, with an unspecified host replaced by the
	// machine's hostname).
	Listen    string
	Advertise string
	// Socket, when set, is a unix socket it also listens on (kvcache.ListenUnix).
	Socket string
	// Budget bounds the bytes it keeps (DefaultHolderBudget when 0).
	Budget int64
	Logger zerolog.Logger
}

// NodeHolder is a node's running KV-cache holder (package kvcache).
type NodeHolder struct {
	holder *kvcache.Holder
	addr   string
	serves sync.WaitGroup
	once   sync.Once
	err    error
}

// StartHolder starts a KV-cache holder serving until Close.
func StartHolder(o HolderOptions) (*NodeHolder, error) {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.Budget <= 0 {
		o.Budget = DefaultHolderBudget()
	}
	h, err := kvcache.New(kvcache.Options{Budget: o.Budget, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("starting the kv-cache holder on %s: %w", o.Listen, err)
	}
	listeners := []net.Listener{l}
	if o.Socket != "" {
		u, err := kvcache.ListenUnix(o.Socket)
		if err != nil {
			_ = l.Close()
			return nil, fmt.Errorf("starting the kv-cache holder: %w", err)
		}
		listeners = append(listeners, u)
	}
	n := &NodeHolder{holder: h, addr: o.Advertise}
	if n.addr == "" {
		n.addr = advertised(l.Addr().(*net.TCPAddr))
	}
	for _, l := range listeners {
		n.serves.Add(1)
		go func() {
			defer n.serves.Done()
			if err := h.Serve(l); err != nil && !errors.Is(err, kvcache.ErrHolderClosed) {
				o.Logger.Error().Err(err).Str("listen", l.Addr().String()).Msg("kv-cache holder stopped serving")
			}
		}()
	}
	o.Logger.Info().Str("addr", n.addr).Int64("budget", o.Budget).Msg("kv-cache holder up")
	return n, nil
}

// advertised is the address others dial for a listener's address.
func advertised(a *net.TCPAddr) string {
	host := a.IP.String()
	if a.IP.IsUnspecified() {
		if h, err := os.Hostname(); err == nil && h != "" {
			host = h
		} else {
			host = "127.0.0.1"
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(a.Port))
}

// Addr is the holder's host:port, what RunStage reports as holder_addr.
func (n *NodeHolder) Addr() string { return n.addr }

// Host is the host of Addr: where the node's inference workers listen too.
func (n *NodeHolder) Host() string {
	h, _, err := net.SplitHostPort(n.addr)
	if err != nil {
		return "127.0.0.1"
	}
	return h
}

// Stats is what the holder keeps now.
func (n *NodeHolder) Stats() kvcache.Stats { return n.holder.Stats() }

// Close stops the holder (its replicas go with it) and waits for its listeners.
func (n *NodeHolder) Close() error {
	n.once.Do(func() {
		n.err = n.holder.Close()
		n.serves.Wait()
	})
	return n.err
}

// ServingReporter is the node side's view of ServingDeployment workflows (stage.Deployment)
// over the Temporal client: the stage-ready signal and the stages query. The deployment id is
// the workflow id, kept by continue-as-new, so both go to the current run.
type ServingReporter struct {
	Client client.Client
}

var _ stage.Deployment = (*ServingReporter)(nil)

// StageReady signals stage-ready to the deployment.
func (r *ServingReporter) StageReady(ctx context.Context, deploymentID string, m serving.StageReady) error {
	if err := r.Client.SignalWorkflow(ctx, deploymentID, "", serving.SignalStageReady, m); err != nil {
		return fmt.Errorf("signalling stage-ready of replica %d stage %d to %s: %w", m.Replica, m.Stage, deploymentID, err)
	}
	return nil
}

// Stages queries the deployment's stages (the router's view).
func (r *ServingReporter) Stages(ctx context.Context, deploymentID string) (serving.Pipeline, error) {
	var p serving.Pipeline
	v, err := r.Client.QueryWorkflow(ctx, deploymentID, "", serving.QueryStages)
	if err != nil {
		return p, fmt.Errorf("querying the stages of %s: %w", deploymentID, err)
	}
	if err := v.Get(&p); err != nil {
		return p, fmt.Errorf("decoding the stages of %s: %w", deploymentID, err)
	}
	return p, nil
}

// newServingNode is the RunStage side of a node whose holder is h.
func newServingNode(id string, h *NodeHolder, dep stage.Deployment, log zerolog.Logger) *servingact.Node {
	return &servingact.Node{Supervisor: &stage.Supervisor{NodeID: id, HolderAddr: h.Addr(), Host: h.Host(),
		Deployment: dep, Logger: log}}
}

// ServingNodeStarter starts the worker of a simulated node's queue with the node's trainer
// and serving activities registered, and returns how to stop it.
type ServingNodeStarter func(instanceID string, t *trainingact.Trainer, n *servingact.Node) (stop func(), err error)

// NodeWorkerStarterWithServing is the ServingNodeStarter of real Temporal workers: one worker
// per node queue, serving the trainer and the serving (RunStage) activities.
func NodeWorkerStarterWithServing(c client.Client, opts worker.Options) ServingNodeStarter {
	return func(id string, t *trainingact.Trainer, n *servingact.Node) (func(), error) {
		o := opts
		if o.Identity == "" {
			o.Identity = "sim-node-" + id
		}
		w := worker.New(c, taskqueue.Node(id), o)
		trainingact.RegisterNode(w, t)
		servingact.RegisterNode(w, n)
		// A simulated node has a modelled GPU: its studies are marked simulated.
		interferenceact.RegisterNode(w, &interferenceact.Profiler{NodeID: id, Executor: fake.New()})
		// It has no GPU to share: a pair placed there is refused with that reason.
		colocationact.RegisterNode(w, &colocationact.Node{NodeID: id})
		if err := w.Start(); err != nil {
			return nil, fmt.Errorf("starting the worker of node %s: %w", id, err)
		}
		return w.Stop, nil
	}
}
