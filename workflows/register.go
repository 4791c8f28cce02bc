// Package workflows gathers schooner's Temporal workflows, one sub-package per domain:
// nodeswf (node registry and inventory), fleetwf (acquiring a job's instances), trainingwf
// (TrainingJob), servingwf (ServingDeployment), interferencewf (InterferenceStudy) and
// colocationwf (Colocation). Each domain's contract lives in a package without Temporal (nodes,
// fleet, training, serving, interference, colocation). Code under workflows/ is deterministic: no I/O, no goroutines, no wall clock, no
// map iteration that decides anything; the committed histories under testdata/replay prove it.
package workflows

import (
	"go.temporal.io/sdk/worker"

	"github.com/schooner-ml/schooner/workflows/colocationwf"
	"github.com/schooner-ml/schooner/workflows/fleetwf"
	"github.com/schooner-ml/schooner/workflows/interferencewf"
	"github.com/schooner-ml/schooner/workflows/nodeswf"
	"github.com/schooner-ml/schooner/workflows/servingwf"
	"github.com/schooner-ml/schooner/workflows/trainingwf"
)

// Register registers every workflow under its stable name. The control worker and the replay
// test both call it, so the replay test replays exactly what production runs.
func Register(r worker.WorkflowRegistry) {
	nodeswf.Register(r)
	fleetwf.Register(r)
	trainingwf.Register(r)
	servingwf.Register(r)
	interferencewf.Register(r)
	colocationwf.Register(r)
}
