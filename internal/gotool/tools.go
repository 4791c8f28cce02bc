package gotool

// TemporalCLI is the temporal command the tests drive schooner with, as users do (its
// --codec-endpoint, workflow start/show). Any temporal on PATH is taken instead.
var TemporalCLI = Tool{Name: "temporal", Package: "github.com/temporalio/cli/cmd/temporal", Version: "v1.5.1"}
