package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/colocation"
	"github.com/schooner-ml/schooner/interference"
	"github.com/schooner-ml/schooner/taskqueue"
	"github.com/schooner-ml/schooner/workers"
	"github.com/schooner-ml/schooner/workers/wfclient"
	"github.com/schooner-ml/schooner/workflows/colocationwf"
)

// clusterPairFlags are what `colocate run --node` adds to a local run: the evidence placement
// decides on, and where the cluster is.
type clusterPairFlags struct {
	cfg   workers.ClientConfig
	node  string
	study string
	kinds string
	force bool
	id    string
}

// colocationInput is the workflow's input from the flags: the study read and checked, the
// kinds parsed.
func (f clusterPairFlags) colocationInput(pair colocation.Pair) (colocation.Input, error) {
	in := colocation.Input{Node: f.node, Pair: pair, Force: f.force}
	if f.study != "" {
		st, err := interference.ReadFile(f.study)
		if err != nil {
			return in, fmt.Errorf("--study: %w", err)
		}
		in.Study = &st
	}
	if f.kinds != "" {
		lc, be, ok := strings.Cut(f.kinds, "+")
		if !ok {
			return in, fmt.Errorf("--kinds %q: write it LC+BE, e.g. decode-chain+train-step", f.kinds)
		}
		in.Kinds = interference.Pair{LC: lc, BE: be}
	}
	in = in.WithDefaults()
	return in, in.Validate()
}

// runOnNode starts the Colocation workflow and follows it to its end, printing the pair's
// progress from the activity's heartbeats.
func runOnNode(cmd *cobra.Command, g *globals, f clusterPairFlags, in colocation.Input) (colocation.Result, error) {
	var res colocation.Result
	err := withSession(cmd, g, f.cfg, "", func(ctx context.Context, s *session) error {
		id := f.id
		if id == "" {
			id = fmt.Sprintf("schooner-colocate-%d", time.Now().UnixNano())
		}
		run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: id, TaskQueue: taskqueue.Control, StaticSummary: "colocated pair on node " + in.Node + " (schooner colocate run)",
		}, colocationwf.Colocation, in)
		if err != nil {
			return fmt.Errorf("starting Colocation: %w", err)
		}
		errw := cmd.ErrOrStderr()
		fmt.Fprintf(errw, "Colocation %s started on node %s (schooner colocate status %s)\n", id, in.Node, id)
		done := make(chan error, 1)
		go func() { done <- run.Get(ctx, &res) }()
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case err := <-done:
				return err
			case <-tick.C:
				if st, ok := liveStatus(ctx, s.client, id); ok {
					fmt.Fprintln(errw, progressLine(st))
				}
			}
		}
	})
	return res, err
}

// liveStatus is the running pair's last heartbeat, if it has sent one.
func liveStatus(ctx context.Context, c client.Client, id string) (colocation.Status, bool) {
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return colocation.Status{}, false
	}
	for _, a := range d.GetPendingActivities() {
		if a.GetActivityType().GetName() != colocation.ActivityRunColocated || a.GetHeartbeatDetails() == nil {
			continue
		}
		var st colocation.Status
		if wfclient.ConverterOf(c).FromPayloads(a.GetHeartbeatDetails(), &st) == nil {
			return st, true
		}
	}
	return colocation.Status{}, false
}

// newColocateStatusCommand is `schooner colocate status ID`.
func newColocateStatusCommand(g *globals) *cobra.Command {
	return newShowCommand(g, &cobra.Command{
		Use:   "status ID",
		Short: "Show a Colocation workflow: phase, placement, the running pair's counters or its result",
		Long: `status queries a Colocation workflow (started by 'schooner colocate run --node' or the
temporal CLI) for its phase and the reason it was placed or refused, and, while the pair runs,
reads the node's last heartbeat: both sides' kernels, the HP slowdown, the BE budget and state.

  schooner colocate status schooner-colocate-1733350000000000000`,
		Args: cobra.ExactArgs(1),
	}, "print the status as JSON", func(ctx context.Context, s *session, args []string) (colocationView, error) {
		var view colocationView
		v, err := s.client.QueryWorkflow(ctx, args[0], "", colocation.QueryStatus)
		if err != nil {
			return view, fmt.Errorf("Colocation %s: %w", args[0], err)
		}
		if err := v.Get(&view.Status); err != nil {
			return view, err
		}
		if live, running := liveStatus(ctx, s.client, args[0]); running {
			view.Live = &live
		}
		return view, nil
	}, printColocationStatus)
}

// colocationView is what `schooner colocate status` shows: the workflow's status and, while
// the pair runs, the node's last heartbeat.
type colocationView struct {
	Live   *colocation.Status        `json:"live,omitempty"`
	Status colocation.WorkflowStatus `json:"status"`
}

func printColocationStatus(w io.Writer, view colocationView) error {
	st := view.Status
	fmt.Fprintf(w, "phase: %s on node %s\n", st.Phase, st.Node)
	if st.Placement != "" {
		fmt.Fprintf(w, "placement: %s\n", st.Placement)
	}
	if !st.Started.IsZero() {
		fmt.Fprintf(w, "started: %s\n", st.Started.Format(time.RFC3339))
	}
	if view.Live != nil {
		fmt.Fprintln(w, progressLine(*view.Live))
	}
	if st.Error != "" {
		fmt.Fprintf(w, "error: %s\n", st.Error)
	}
	if st.Result != nil {
		printColocation(w, *st.Result)
	}
	return nil
}

// errNoNodeForStudy is returned when the flags ask for evidence without a node to apply it to.
var errNoNodeForStudy = errors.New("--study, --kinds and --force place a pair on a node: give --node")
