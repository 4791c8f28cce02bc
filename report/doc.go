// Package report turns a finished training job's status (workflows.JobStatus, as the status
// query or the job's result returns it) into what a person reads afterwards: a summary that
// `schooner demo --json` prints, a Markdown report and an SVG timeline of GPUs by zone and
// type, cost and progress. It is plain text generation: no Temporal client, no I/O beyond
// writing the files it is asked to write.
package report
