package training

// Error types of a TrainingJob and its activities, as Temporal application errors carry
// them, so the workflow, the CLI and tests decide by type and never by message.
const (
	// ErrTypeInvalidSpec: the spec is invalid; the details are the []FieldError naming every
	// bad field. Final: nothing was bought.
	ErrTypeInvalidSpec = "InvalidSpec"
	// ErrTypeNoPlan: no plan fits the GPUs on offer (memory, batch or capacity).
	ErrTypeNoPlan = "NoPlan"
	// ErrTypeInfeasible: no plan fits even with max_gpus GPUs free in any allowed offering;
	// no capacity that returns would help, so the job fails at once.
	ErrTypeInfeasible = "Infeasible"
	// ErrTypeOverBudget: plans exist but every one costs more per hour than the cap.
	ErrTypeOverBudget = "OverBudget"
	// ErrTypeBadModel: the model cannot be profiled; the spec is wrong.
	ErrTypeBadModel = "BadModel"
	// ErrTypeStateMismatch: the job's final durable state is not what an uninterrupted run
	// gives (simulated trainer), or the check could not be made; the job fails.
	ErrTypeStateMismatch = "StateMismatch"
	// ErrTypeForeignCheckpoints: the job's checkpoint namespace holds another job's
	// checkpoints (or steps without an owner); the job refuses to restore from them.
	ErrTypeForeignCheckpoints = "ForeignCheckpoints"
)
