//go:build !agentonly

package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/devserver/stack"
)

// addServerFlags binds where the embedded server of `schooner dev` and `schooner demo`
// listens; the two differ in the default gRPC port and in what a taken port means.
func addServerFlags(fs *pflag.FlagSet, o *stack.Options, port int, portHelp, uiPortHelp string) {
	fs.StringVar(&o.IP, "ip", "127.0.0.1", "loopback address to bind the server and UI to (the embedded server has no authentication: others reach it through an SSH tunnel)")
	fs.IntVar(&o.Port, "port", port, portHelp)
	fs.IntVar(&o.UIPort, "ui-port", 8233, uiPortHelp)
	fs.BoolVar(&o.Headless, "headless", false, "do not serve the Temporal UI")
	fs.StringVar(&o.CodecKeyFile, "codec-key-file", os.Getenv("SCHOONER_CODEC_KEY_FILE"),
		"seal every payload with the AES-256-GCM keys of this file (made by schooner codec keygen; env SCHOONER_CODEC_KEY_FILE); the UI then needs schooner codec serve to show them")
	fs.StringVar(&o.CodecEndpoint, "codec-endpoint", os.Getenv("SCHOONER_CODEC_ENDPOINT"),
		"the codec server the UI decodes payloads with, e.g. http://127.0.0.1:8081 from schooner codec serve --ui-origin http://127.0.0.1:8233 (env SCHOONER_CODEC_ENDPOINT)")
	fs.StringSliceVar(&o.StoreRoots, "store-root", nil,
		"a directory file:// checkpoint stores may be in (repeatable; default: the data directory, /var/lib/schooner and the OS temp dir)")
	fs.StringArrayVar(&o.AllowedCommands, "allow-command", nil,
		"a command prefix the nodes may run for a job's command trainer (repeatable; e.g. \"/opt/train/run.sh\" or \"python3 -m my_trainer\"; words may be globs); none: command trainers are refused")
	fs.Var(&limitsFile{limits: &o.Limits}, "limits",
		"YAML file of job limits (max_iterations, max_global_batch, max_seq_len, max_model_params, max_gpus, max_spec_bytes); absent fields keep the defaults")
}

// positiveTimeScale checks the simulated market's --time-scale flag.
func positiveTimeScale(v float64) error {
	if v <= 0 {
		return fmt.Errorf("invalid --time-scale %v: must be positive", v)
	}
	return nil
}

// addTraceFlag registers --trace, the spot-traces directory the simulated market replays, and
// --trace-start. Their defaults come from SCHOONER_TRACE and SCHOONER_TRACE_START, so a team
// that always simulates on its own traces sets them once (a shell profile, a CI job) instead
// of on every command; checkTraceDir refuses a malformed SCHOONER_TRACE_START.
func addTraceFlag(fs *pflag.FlagSet, o *stack.Options) {
	start, _ := envDuration(traceStartEnv) // refused by checkTraceDir when malformed
	fs.StringVar(&o.TraceDir, "trace", os.Getenv(traceEnv), "replay this SkyPilot spot-traces directory (files <zone>_<gpu>_<count>.json, e.g.\n"+
		"availability/16-node/aws-08-27-2023 of github.com/skypilot-org/spot-traces) instead of the bundled\n"+
		"AWS traces; offerings it has no file for keep the seeded capacity model (env "+traceEnv+")")
	fs.DurationVar(&o.TraceStart, "trace-start", start, "replay the traces from this far into them (e.g. 36h), as `schooner policy eval` starts its runs at\n"+
		"offsets into the traces (its --json lists them; env "+traceStartEnv+")")
}

// The environment variables that give --trace and --trace-start their defaults.
const (
	traceEnv      = "SCHOONER_TRACE"
	traceStartEnv = "SCHOONER_TRACE_START"
)

// envDuration is the duration in the environment variable name, 0 when it is unset.
func envDuration(name string) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("invalid %s %q: a duration such as 36h or 90m", name, v)
	}
	return d, nil
}

// checkTraceDir reads --trace's directory before anything starts, so a bad file is named at
// once, and says which files of it are left out.
func checkTraceDir(o stack.Options, out io.Writer) error {
	if _, err := envDuration(traceStartEnv); err != nil {
		return err
	}
	if o.TraceStart < 0 {
		return fmt.Errorf("invalid --trace-start %s: must not be negative", o.TraceStart)
	}
	if o.TraceDir == "" {
		return nil
	}
	traces, skipped, err := sim.LoadSkyPilotDir(o.TraceDir)
	if err != nil {
		return fmt.Errorf("--trace: %w", err)
	}
	if len(traces) == 1 {
		fmt.Fprintf(out, "spot traces: 1 offering replays %s\n", o.TraceDir)
	} else {
		fmt.Fprintf(out, "spot traces: %d offerings replay %s\n", len(traces), o.TraceDir)
	}
	for _, why := range skipped {
		fmt.Fprintf(out, "  left out: %s\n", why)
	}
	return nil
}
