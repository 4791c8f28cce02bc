// Package training is the domain of a training job, free of Temporal: the job spec users write
// (YAML or JSON), its validation, and the assignment one trainer process receives for one plan.
// The TrainingJob workflow (package workflows) orchestrates; this package says what a job is.
package training
