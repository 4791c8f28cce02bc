package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/gpu"
)

func newCloudCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cloud",
		Short: "See spot offerings and instances across clouds, and clean up leaked instances",
		Long: `cloud talks to a provider directly: the simulated market of 'schooner dev' (--cloud sim,
the default, through its EC2 and Compute API faces and the real AWS and GCP SDKs), AWS
(credentials from the default chain) or GCP (Application Default Credentials).

  schooner cloud offerings --gpu A100-40
  schooner cloud offerings --cloud aws --aws-endpoint http://127.0.0.1:7240
  schooner cloud instances --job my-job
  schooner cloud gc --job my-job`,
	}
	cmd.AddCommand(newOfferingsCommand(), newInstancesCommand(), newGCCommand())
	return cmd
}

// newCloudSubcommand completes c as a cloud subcommand: it takes the cloud flags and no
// arguments, and runs run with the provider the flags choose (one that sees live instances
// when live), under a context that ends after timeout. Checks that need no provider belong in
// c.PreRunE, which runs first.
func newCloudSubcommand(c *cobra.Command, timeout time.Duration, live bool,
	run func(ctx context.Context, cmd *cobra.Command, p cloud.Provider, note string) error) *cobra.Command {
	var f cloudFlags
	c.Args = cobra.NoArgs
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
		defer cancel()
		p, note, err := f.provider(ctx, live)
		if err != nil {
			return err
		}
		return run(ctx, cmd, p, note)
	}
	addCloudFlags(c.Flags(), &f)
	return c
}

func newOfferingsCommand() *cobra.Command {
	var asJSON bool
	var filter cloud.OfferingFilter
	var gpus []string
	cmd := newCloudSubcommand(&cobra.Command{
		Use:   "offerings",
		Short: "List GPU offerings: zone, instance type, GPUs, spot and on-demand price, capacity hint",
		PreRunE: func(*cobra.Command, []string) error {
			for _, g := range gpus {
				if !gpu.Known(gpu.Type(g)) {
					return fmt.Errorf("unknown --gpu %q: known types are %v", g, gpu.KnownTypes)
				}
				filter.GPUTypes = append(filter.GPUTypes, gpu.Type(g))
			}
			return nil
		},
	}, 2*time.Minute, false, func(ctx context.Context, cmd *cobra.Command, p cloud.Provider, note string) error {
		offers, err := p.Offerings(ctx, filter)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(cmd.OutOrStdout(), offers)
		}
		if note != "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "source: %s\n", note)
		}
		printOfferings(cmd.OutOrStdout(), offers)
		return nil
	})
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringSliceVar(&gpus, "gpu", nil, "only these GPU types (e.g. A100-40, H100-80)")
	cmd.Flags().StringSliceVar(&filter.Regions, "region", nil, "only these regions")
	cmd.Flags().StringSliceVar(&filter.Zones, "zone", nil, "only these zones")
	cmd.Flags().StringSliceVar(&filter.InstanceTypes, "instance-type", nil, "only these instance types")
	return cmd
}

func newInstancesCommand() *cobra.Command {
	var asJSON bool
	var job string
	cmd := newCloudSubcommand(&cobra.Command{
		Use:   "instances",
		Short: "List the live instances of a job (by its " + cloud.JobTag + " tag), or of every job",
	}, 2*time.Minute, true, func(ctx context.Context, cmd *cobra.Command, p cloud.Provider, _ string) error {
		tags := map[string]string{}
		if job != "" {
			tags[cloud.JobTag] = job
		}
		insts, err := p.List(ctx, tags)
		if err != nil {
			return err
		}
		if job == "" {
			insts = withJobTag(insts)
		}
		if asJSON {
			return printJSON(cmd.OutOrStdout(), insts)
		}
		printInstances(cmd.OutOrStdout(), insts)
		return nil
	})
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&job, "job", "", "job id (empty: every instance schooner tagged)")
	return cmd
}

func newGCCommand() *cobra.Command {
	var job string
	var dryRun bool
	cmd := newCloudSubcommand(&cobra.Command{
		Use:   "gc",
		Short: "Find and terminate instances leaked by a job (tagged " + cloud.JobTag + "=<job>)",
		Long: `gc lists every live instance tagged with the job's id and terminates it. Use it after a
job was killed in a way that skipped its own cleanup. --dry-run only lists.`,
		PreRunE: func(*cobra.Command, []string) error {
			if job == "" {
				return fmt.Errorf("--job is required: gc never terminates instances of every job at once")
			}
			return nil
		},
	}, 5*time.Minute, true, func(ctx context.Context, cmd *cobra.Command, p cloud.Provider, _ string) error {
		insts, err := p.List(ctx, map[string]string{cloud.JobTag: job})
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if len(insts) == 0 {
			fmt.Fprintf(out, "no live instances of job %s\n", job)
			return nil
		}
		printInstances(out, insts)
		if dryRun {
			fmt.Fprintf(out, "dry run: %d instances would be terminated\n", len(insts))
			return nil
		}
		ids := cloud.IDs(insts)
		if err := p.Terminate(ctx, ids); err != nil {
			return fmt.Errorf("terminating leaked instances of %s: %w", job, err)
		}
		fmt.Fprintf(out, "terminated %d instances of job %s\n", len(ids), job)
		return nil
	})
	cmd.Flags().StringVar(&job, "job", "", "job id whose instances to clean up (required)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be terminated, terminate nothing")
	return cmd
}

func withJobTag(insts []cloud.Instance) []cloud.Instance {
	out := insts[:0]
	for _, i := range insts {
		if i.Tags[cloud.JobTag] != "" {
			out = append(out, i)
		}
	}
	return out
}
