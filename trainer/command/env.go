package command

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"

	"github.com/schooner-ml/schooner/training"
)

// Batch is the job's batch split. training.Assignment does not carry it yet, so the caller
// passes what it knows; zero values are passed on as 0, which means "not known".
type Batch struct {
	Global int
	Micro  int
}

// Environment is the environment the user's program runs with: the node's own environment,
// then the spec's env, then the SCHOONER_* variables of the assignment, which win over both so
// a spec cannot misplace a trainer by accident.
func Environment(a training.Assignment, socket string, b Batch) ([]string, error) {
	plan, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("encoding the assignment for SCHOONER_PLAN_JSON: %w", err)
	}
	env := os.Environ()
	for _, k := range slices.Sorted(maps.Keys(a.Trainer.Env)) {
		env = append(env, k+"="+a.Trainer.Env[k])
	}
	for _, kv := range Variables(a, socket, b) {
		env = append(env, kv[0]+"="+kv[1])
	}
	return append(env, "SCHOONER_PLAN_JSON="+string(plan)), nil
}

// Variables are the SCHOONER_* variables of an assignment except SCHOONER_PLAN_JSON, as
// name-value pairs in a fixed order (the documentation lists them in this order).
func Variables(a training.Assignment, socket string, b Batch) [][2]string {
	pp, dp, tp := max(a.Plan.PP, 1), max(a.Plan.DP, 1), max(a.Plan.TP, 1)
	i := strconv.Itoa
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	saver := "0"
	if a.Saver {
		saver = "1"
	}
	return [][2]string{
		{"SCHOONER_JOB_ID", a.JobID},
		{"SCHOONER_EPOCH", i(a.Epoch)},
		{"SCHOONER_INSTANCE_ID", a.InstanceID},
		{"SCHOONER_RANK", i(a.Rank)},
		{"SCHOONER_WORLD_SIZE", i(pp * dp)},
		{"SCHOONER_STAGE", i(a.Stage)},
		{"SCHOONER_REPLICA", i(a.Replica)},
		{"SCHOONER_DP", i(dp)},
		{"SCHOONER_PP", i(pp)},
		{"SCHOONER_TP", i(tp)},
		{"SCHOONER_LAYERS_FIRST", i(a.Layers.First)},
		{"SCHOONER_LAYERS_END", i(a.Layers.End)},
		{"SCHOONER_MICRO_BATCH", i(b.Micro)},
		{"SCHOONER_GLOBAL_BATCH", i(b.Global)},
		{"SCHOONER_ITERATIONS", i64(a.Iterations)},
		{"SCHOONER_RESTORE_STEP", i64(a.RestoreStep)},
		{"SCHOONER_CHECKPOINT_EVERY", i64(a.CheckpointEvery)},
		{"SCHOONER_SAVER", saver},
		{"SCHOONER_CKPT_SOCKET", socket},
		{"SCHOONER_CKPT_RANK", i(a.Stage)},
		{"SCHOONER_CKPT_WORLD", i(max(a.Plan.World, 1))},
		{"SCHOONER_SEED", i64(a.Seed)},
	}
}
