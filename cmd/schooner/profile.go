package main

import "github.com/spf13/cobra"

// newProfileCommand groups the commands that measure what the planner needs. They run on the
// machines being measured, not on the control plane, so they need no Temporal connection.
func newProfileCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profile",
		Short: "Measure the profiles the planner's simulator uses (on a GPU node)",
		Long: `profile measures, on the GPU node it runs on, what the planner's simulator otherwise takes
from Sailor's published data or derives from datasheets, and writes it as a profile file
(docs/profiles.md) that 'schooner plan simulate --profiles DIR' and 'schooner plan search
--profiles DIR' read.

  schooner profile model --model OPT-350 --mbs 1,2,4 --out profiles/OPT-350.json`,
	}
	cmd.AddCommand(newProfileModelCommand(), newProfileCalibrateCommand())
	return cmd
}
