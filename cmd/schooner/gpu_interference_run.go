package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	gi "github.com/schooner-ml/schooner/gpu/interference"
	"github.com/schooner-ml/schooner/interference"
	"github.com/schooner-ml/schooner/internal/atomicfile"
	"github.com/schooner-ml/schooner/taskqueue"
	"github.com/schooner-ml/schooner/workers"
	"github.com/schooner-ml/schooner/workflows/interferencewf"
)

// newGPUInterferenceRunCommand is `schooner gpu interference run`: the InterferenceStudy
// workflow on one or many nodes, each node's study written and shown.
func newGPUInterferenceRunCommand(g *globals) *cobra.Command {
	var cfg workers.ClientConfig
	var nodeIDs, pairs, mechs []string
	var in interference.StudyInput
	var out string
	var local, cpuTest, resume bool
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run an interference study on node agents (the InterferenceStudy workflow) and show each node's results",
		Long: `run starts the InterferenceStudy workflow: every named node (every registered node when
none is named) runs each workload alone, then every pair under every mechanism, on its own GPU,
and the results come back as one study per node, written to --out as NODE.json (the versioned
format of docs/interference.md) with NODE.svg, and shown as a table.

Which executor a node uses is the node agent's: a node agent on a machine with an NVIDIA GPU
and a python3 with torch runs the Python executor (trainer/python/schooner_interfere); the
simulated market's nodes (schooner dev, schooner demo) model a GPU and mark their studies
SIMULATED. --local runs the study here, on this machine's GPU, without Temporal.

--local writes NODE.json after every finished step, so a study stopped at any point (Ctrl-C,
SIGTERM, a timeout) keeps what it measured; the file lists the steps still missing. --resume
continues it: the runs in --out are kept (when they were made on this very card, not only this
model and driver, at this scale, with the same requests, think time, repeats and counters;
otherwise it says what differs) and only the missing steps run. A full study (about 15 minutes on an H100) thus runs
as one command repeated, each run within a machine's time limit, until it exits 0:

  schooner gpu interference run --local --out results/h200
  timeout 550 schooner gpu interference run --local --out results/h200 --resume   # repeat while it exits 124
  while timeout 550 schooner gpu interference run --local --out results/h200 --resume; [ $? -eq 124 ]; do :; done
  schooner gpu interference run --local --pair decode-chain+gemm --counters

  schooner gpu interference run --node i-0abc --pair decode-chain+gemm --mechanism streams --mechanism mps-50
  temporal workflow execute --type InterferenceStudy --task-queue schooner-control \
    --input '{"nodes":["i-0abc"],"request":{"pairs":[{"latency_critical":"decode-chain","best_effort":"gemm"}],"mechanisms":[{"kind":"streams"}]}}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in.Nodes = nodeIDs
			if err := parseStudyFlags(&in.Request, pairs, mechs); err != nil {
				return err
			}
			in = in.WithDefaults()
			if err := in.Validate(); err != nil {
				return err
			}
			if local {
				return runLocalStudy(cmd, in.Request, out, cpuTest, resume)
			}
			if resume {
				return fmt.Errorf("--resume continues a --local study: a workflow's study is one node's activity, retried whole")
			}
			return withSession(cmd, g, cfg, "", func(ctx context.Context, s *session) error {
				run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
					ID:            fmt.Sprintf("schooner-interference-%d", time.Now().UnixNano()),
					TaskQueue:     taskqueue.Control,
					StaticSummary: "interference study (schooner gpu interference run)",
				}, interferencewf.InterferenceStudy, in)
				if err != nil {
					return fmt.Errorf("starting InterferenceStudy: %w", err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "InterferenceStudy %s started; waiting for the nodes\n", run.GetID())
				var res interference.StudyResult
				if err := run.Get(ctx, &res); err != nil {
					return fmt.Errorf("InterferenceStudy %s: %w", run.GetID(), err)
				}
				return writeStudies(cmd.OutOrStdout(), out, res)
			})
		},
	}
	addClientFlags(cmd.Flags(), &cfg)
	cmd.Flags().StringSliceVar(&nodeIDs, "node", nil, "a node to profile (repeat; default every registered node)")
	cmd.Flags().StringSliceVar(&pairs, "pair", nil, "LC+BE, e.g. decode-chain+gemm (repeat; default every latency-critical workload against every best-effort one)")
	cmd.Flags().StringSliceVar(&mechs, "mechanism", nil, "e.g. streams, priority, mps-50, green-context-66, time-slicing (repeat; default all, MIG included, reported unavailable where off)")
	cmd.Flags().IntVar(&in.Request.Requests, "requests", 0, "latency-critical requests per run (default 200)")
	cmd.Flags().Float64Var(&in.Request.ThinkMs, "think-ms", 0, "mean think time between requests, ms (Poisson arrivals; default 2)")
	cmd.Flags().IntVar(&in.Request.Repeats, "repeats", 0, "runs per measurement; the median is kept (default 3)")
	cmd.Flags().BoolVar(&in.Request.Counters, "counters", false, "also profile each workload with Nsight Compute (ncu) where it works; where not, the study says why")
	cmd.Flags().DurationVar(&in.Wait, "wait", 0, "how long a node may take to pick the study up before it is reported unreachable (default 30s)")
	cmd.Flags().StringVar(&out, "out", "interference-results", "folder for each node's NODE.json and NODE.svg")
	cmd.Flags().BoolVar(&local, "local", false, "run the study on this machine's GPU, without Temporal")
	cmd.Flags().BoolVar(&resume, "resume", false, "with --local: continue the study in --out (its missing steps only; refused when it was measured another way)")
	cmd.Flags().BoolVar(&cpuTest, "cpu-test", false, "with --local on a machine without a GPU: the executor's CPU test mode (tiny workloads; not a GPU study)")
	return cmd
}

// parseStudyFlags fills the request's pairs and mechanisms from LC+BE and mechanism names;
// none given means the default study's.
func parseStudyFlags(req *interference.StudyRequest, pairs, mechs []string) error {
	d := interference.DefaultStudy()
	req.Pairs, req.Mechanisms = d.Pairs, d.Mechanisms
	if len(pairs) > 0 {
		req.Pairs = nil
		for _, p := range pairs {
			lc, be, ok := strings.Cut(p, "+")
			if !ok {
				return fmt.Errorf("--pair %q: write it LC+BE, e.g. decode-chain+gemm", p)
			}
			req.Pairs = append(req.Pairs, interference.Pair{LC: lc, BE: be})
		}
	}
	if len(mechs) > 0 {
		req.Mechanisms = nil
		for _, s := range mechs {
			m, err := interference.ParseMechanism(s)
			if err != nil {
				return fmt.Errorf("--mechanism: %w", err)
			}
			req.Mechanisms = append(req.Mechanisms, m)
		}
	}
	return nil
}

// writeStudies writes each node's study (and its plot) under dir and prints its table; nodes
// without a study are listed with the reason. It fails when no node produced a study.
func writeStudies(w io.Writer, dir string, res interference.StudyResult) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ok := 0
	for _, n := range res.Nodes {
		fmt.Fprintf(w, "== node %s\n", n.NodeID)
		if n.Study == nil {
			fmt.Fprintf(w, "no study: %s\n\n", n.Error)
			continue
		}
		st := *n.Study
		rows, err := gi.Analyze(st)
		if err != nil {
			fmt.Fprintf(w, "no table: %v\n\n", err)
			continue
		}
		base := filepath.Join(dir, safeName(n.NodeID))
		if err := atomicfile.Write(base+".json", st.Encode); err != nil {
			return err
		}
		if err := atomicfile.Write(base+".svg", func(f io.Writer) error { return gi.WriteSVG(f, st, rows) }); err != nil {
			return err
		}
		if err := gi.WriteTable(w, st, rows); err != nil {
			return err
		}
		fmt.Fprintf(w, "written: %s.json, %s.svg\n\n", base, base)
		ok++
	}
	if ok == 0 {
		return fmt.Errorf("no node produced a study")
	}
	return nil
}

// safeName keeps a node id usable as a file name.
func safeName(id string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || r == 0 {
			return '_'
		}
		return r
	}, id)
}
