package training

// TrainerResult is what one trainer's RunTrainer activity returns when it finished its
// assignment: the job needs the final iteration to know the run completed and the last
// checkpoint to know the final state is durable before it releases the machines.
type TrainerResult struct {
	Rank           int   `json:"rank"`
	FinalIteration int64 `json:"final_iteration"`
	// LastCheckpoint is the newest step this trainer saw durable in the remote store (-1:
	// none; always -1 for a data-parallel replica that does not save).
	LastCheckpoint int64 `json:"last_checkpoint"`
}

// NoResult is the result of rank before it trained anything: no iteration reached, no step
// durable. Trainers start from it and return it when they fail early.
func NoResult(rank int) TrainerResult {
	return TrainerResult{Rank: rank, FinalIteration: -1, LastCheckpoint: -1}
}
