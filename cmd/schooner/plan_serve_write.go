package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/serve"
	"github.com/schooner-ml/schooner/serving"
)

// oneGPUMachines keeps the offerings a spec can deploy a plan on: a spec runs each stage on
// a machine of its own, on one GPU (plan_serve_spec.go), so a plan on larger machines
// could not be written. Planning on them only would hide the cheapest deployable plan behind
// ones that cannot be deployed.
func oneGPUMachines(offers []cloud.Offering) (kept []cloud.Offering, dropped int) {
	for _, o := range offers {
		if o.GPUsPerInstance <= 1 {
			kept = append(kept, o)
		}
	}
	return kept, len(offers) - len(kept)
}

// writeServeSpec writes plan --pick of res as a spec to --write-spec ("-": stdout), and says
// on stderr what it wrote, what differs from the plan, and how to deploy it.
func writeServeSpec(out, errOut io.Writer, f *planServeFlags, in specInputs, res *serve.Result) error {
	if f.pick > len(res.Plans) {
		return fmt.Errorf("--pick %d: the planner found %d plans", f.pick, len(res.Plans))
	}
	p := res.Plans[f.pick-1]
	spec, notes, err := specFromPlan(p, f.pick, in)
	var ue *unexpressibleError
	if errors.As(err, &ue) {
		ue.Shown = len(res.Plans)
		for i, other := range res.Plans {
			if len(unexpressible(other)) == 0 {
				ue.Writable = append(ue.Writable, i+1)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("--write-spec: %w", err)
	}
	data, err := renderSpec(spec, specHeader(p, f, len(res.Plans), notes))
	if err != nil {
		return fmt.Errorf("--write-spec: %w", err)
	}
	target := f.specPath
	if target == "-" {
		_, err = out.Write(data)
		target = "stdout"
	} else {
		err = os.WriteFile(target, data, 0o644)
	}
	if err != nil {
		return fmt.Errorf("writing the spec: %w", err)
	}
	fmt.Fprintf(errOut, "wrote plan %d (%s) as a ServingDeployment spec to %s\n", f.pick, planConfig(p), target)
	for _, n := range notes {
		fmt.Fprintf(errOut, "  differs from the plan: %s\n", n)
	}
	if f.specPath != "-" {
		fmt.Fprintf(errOut, "deploy it with: schooner serve deploy %s\n", f.specPath)
	}
	return nil
}

// specHeader is the file's opening comment: what was planned, its estimates, and what the
// spec leaves to the deployment, so the file explains itself when read later.
func specHeader(p serve.Plan, f *planServeFlags, shown int, notes []string) string {
	lines := []string{
		fmt.Sprintf("Written by `schooner plan serve`: plan %d of %d for %s at %g requests/s, prompt %d and output %d tokens:",
			f.pick, shown, f.model, f.rate, f.prompt, f.output),
		fmt.Sprintf("%s, %s, USD %.2f/h; simulated p99 TTFT %s, TPOT %s.", planConfig(p), gpusWord(p.GPUs), p.USDPerHour,
			fmtSeconds(p.Simulated.TTFTP99), fmtSeconds(p.Simulated.TPOTP99)),
		"Estimates from datasheets, not measurements (docs/serving.md, \"Planning a deployment\").",
	}
	if len(notes) > 0 {
		lines = append(lines, "Differs from the plan:")
		for _, n := range notes {
			lines = append(lines, "- "+n)
		}
	}
	return strings.Join(lines, "\n")
}

// renderSpec is the spec as YAML in the field order of serving.Spec (the order of the
// examples), with header above it and a comment on the fields a reader would ask about.
func renderSpec(s serving.Spec, header string) ([]byte, error) {
	var doc yaml.Node
	if err := doc.Encode(s); err != nil {
		return nil, fmt.Errorf("encoding the spec: %w", err)
	}
	doc.HeadComment = header
	comments := map[string]string{
		"stages":         "pipeline depth: one inference worker per machine",
		"replicas":       "pipelines that prefill and decode",
		"max_batch":      "sequences a replica holds at once, as the plan sized them",
		"max_context":    "prompt + output tokens planned for",
		"kv_replication": "a lost stage resumes without recompute",
	}
	if s.Disaggregated() {
		comments["stages"] = "the depth of both pools' pipelines"
		comments["replicas"] = "token (decode) pool"
		comments["prefill_replicas"] = "prompt (prefill) pool, dealt round-robin over the decode replicas"
		comments["kv_replication"] = "required: prompts reach the decode replicas through the KV-cache holders"
	}
	if s.Spot == fleet.SpotWithFallback {
		comments["spot"] = "spot first, on-demand where none is left, as planned"
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if c, ok := comments[doc.Content[i].Value]; ok {
			doc.Content[i+1].LineComment = c
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("encoding the spec: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encoding the spec: %w", err)
	}
	return buf.Bytes(), nil
}

// checkSpecFlags checks --write-spec and --pick before the search: a model the inference
// worker cannot run is refused before any planning is done for it.
func (f *planServeFlags) checkSpecFlags(a planner.Architecture, bad func(string, ...any)) {
	if f.specPath == "" {
		if f.pick != 1 {
			bad("--pick chooses the plan --write-spec writes: give --write-spec too")
		}
		return
	}
	if f.pick < 1 || f.pick > f.top {
		bad("--pick must be between 1 and --top (%d), got %d", f.top, f.pick)
	}
	if f.specPath == "-" && f.asJSON {
		bad("--json and --write-spec - would both write to stdout: give --write-spec a file")
	}
	if _, err := specModel(a); err != nil {
		bad("--write-spec: --model %s", err)
	}
}

func gpusWord(n int) string {
	if n == 1 {
		return "1 GPU"
	}
	return fmt.Sprintf("%d GPUs", n)
}
