package workflows

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// newReplayer registers every workflow as production does.
func newReplayer(t *testing.T) worker.WorkflowReplayer {
	r := worker.NewWorkflowReplayer()
	Register(r)
	return r
}

// originalIDs are the workflow ids of the recorded histories whose code derives names from
// its own id (a TrainingJob names its Fleet children after the job): replayed under the
// replayer's default id, they would differ. The ids are those of the integration test that
// records them (integration/training_test.go).
var originalIDs = map[string]string{
	"training_job.json": "train-complete-test01",
	// The same run recorded before the meter followed the machines' states from the run's
	// start (meter-from-start).
	"training_job_before_meter_start.json": "train-complete-test01",
	// The same run recorded with the look for returned capacity (scale-up-on-returned-capacity).
	"training_job_scale_up.json": "train-complete-test01",
	// A job with a deadline, whose spot decisions come from the deadline policy, recorded with
	// the job pricing its best on-demand plan (best-on-demand-baseline) and before that.
	"training_job_deadline.json":                 "train-deadline-test01",
	"training_job_deadline_before_baseline.json": "train-deadline-test01",
	"fleet.json": "train-complete-test01-fleet-1-0-0",
	// The lost-stage test's deployment (integration/serving_test.go), recorded with the meter
	// counting only billed machines (serving-meter-from-boot), before that change, and before
	// the noticed machine was released once its worker ended (release-after-handover).
	"serving_deployment.json":                   "serve-tiny-test01",
	"serving_deployment_before_meter_boot.json": "serve-tiny-test01",
	"serving_deployment_before_handover.json":   "serve-tiny-test01",
	// The lost-stage run as a client could have started it before the prefill pool existed:
	// serving_deployment.json with "prefill_replicas": 1 added to its input, which that code
	// ignored (its Spec had no such field), so its history is that run's. Replayed, the
	// version prompt-token-pools keeps it colocated.
	"serving_deployment_before_pools.json": "serve-tiny-test01",
	// A spot-with-fallback deployment that starts on on-demand and returns to spot
	// (integration/serving_spot_test.go; version return-to-spot).
	"serving_deployment_spot_return.json": "serve-tiny-test01",
	// A deployment with a prefill pool whose prefill stage is lost and replaced
	// (integration/serving_pools_test.go; version prompt-token-pools), recorded with each
	// prefill stage placed in its holder's zone (prefill-near-decode) and before that.
	"serving_deployment_pools.json":             "serve-tiny-test01",
	"serving_deployment_pools_before_near.json": "serve-tiny-test01",
}

// TestReplayCommittedHistories replays every history under testdata/replay against the
// current code. A failure means a change broke determinism for workflows already running:
// guard it with workflow.GetVersion instead of editing the history. Histories are recorded
// from real runs by `SCHOONER_RECORD_HISTORY=1 go test ./integration/` (the training job's
// and its Fleet children's histories come from TestTrainingJobCompletes, a demo-shaped run
// with injected preemptions).
func TestReplayCommittedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "replay", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no committed histories found: the replay harness would test nothing")
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			id, ok := originalIDs[filepath.Base(f)]
			if !ok {
				require.NoError(t, newReplayer(t).ReplayWorkflowHistoryFromJSONFile(nil, f))
				return
			}
			r, err := os.Open(f)
			require.NoError(t, err)
			defer r.Close()
			h, err := client.HistoryFromJSON(r, client.HistoryJSONOptions{})
			require.NoError(t, err)
			require.NoError(t, newReplayer(t).ReplayWorkflowHistoryWithOptions(nil, h,
				worker.ReplayWorkflowHistoryOptions{OriginalExecution: workflow.Execution{ID: id}}))
		})
	}
}

// TestReplayDetectsNondeterminism proves the harness can fail: a history whose recorded
// activity no longer matches the code must be rejected.
func TestReplayDetectsNondeterminism(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "replay", "node_inventory.json"))
	require.NoError(t, err)
	activityName := regexp.MustCompile(`"name":\s*"Inventory"`)
	require.True(t, activityName.Match(b), "fixture no longer contains the Inventory activity")
	tampered := activityName.ReplaceAllString(string(b), `"name": "SomethingElse"`)
	path := filepath.Join(t.TempDir(), "tampered.json")
	require.NoError(t, os.WriteFile(path, []byte(tampered), 0o644))
	require.Error(t, newReplayer(t).ReplayWorkflowHistoryFromJSONFile(nil, path))
}
