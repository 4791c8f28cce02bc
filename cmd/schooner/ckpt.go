package main

import "github.com/spf13/cobra"

func newCkptCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ckpt",
		Short: "Inspect, verify and restore checkpoints; run the node checkpoint agent",
		Long: `ckpt works with schooner's checkpoints: the local slots a node's checkpoint agent
writes (PCcheck-style, several in flight, committed atomically) and the durable copies the agent
uploads to object storage.

A store is a URL:
  s3://bucket/prefix?endpoint=http://127.0.0.1:7070&region=us-east-1   any S3-compatible service
  file:///var/lib/schooner/ckpt                                          a directory (or NFS mount)

  schooner ckpt ls --store s3://ckpts/job-7
  schooner ckpt verify --store s3://ckpts/job-7 --step 1200
  schooner ckpt restore --store s3://ckpts/job-7 --to ./restored`,
	}
	addCkptStoreCommands(cmd, g)
	addCkptAgentCommands(cmd, g)
	return cmd
}
