//go:build !agentonly

package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/schooner-ml/schooner/devserver/stack"
)

// addServerFlags binds where the embedded server of `schooner dev` and `schooner demo`
// listens; the two differ in the default gRPC port and in what a taken port means.
func addServerFlags(fs *pflag.FlagSet, o *stack.Options, port int, portHelp, uiPortHelp string) {
	fs.StringVar(&o.IP, "ip", "127.0.0.1", "address to bind the server and UI to")
	fs.IntVar(&o.Port, "port", port, portHelp)
	fs.IntVar(&o.UIPort, "ui-port", 8233, uiPortHelp)
	fs.BoolVar(&o.Headless, "headless", false, "do not serve the Temporal UI")
	fs.StringSliceVar(&o.StoreRoots, "store-root", nil,
		"a directory file:// checkpoint stores may be in (repeatable; default: the data directory, /var/lib/schooner and the OS temp dir)")
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
