package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/checkpoint/agent"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/cloud"
)

// defaultCkptSocket is where trainers look for the agent when SCHOONER_CKPT_SOCKET is unset.
const defaultCkptSocket = "/run/schooner/ckpt.sock"

func addCkptAgentCommands(cmd *cobra.Command, g *globals) {
	cmd.AddCommand(newCkptAgentCommand(g), newCkptAgentStatusCommand())
}

// ckptAgentFlags are the flags of `schooner ckpt agent`.
type ckptAgentFlags struct {
	opts         agent.Options
	socket       string
	storeURL     string
	mode         string
	notices      noticeFlags
	flushTimeout time.Duration
}

func newCkptAgentCommand(g *globals) *cobra.Command {
	var f ckptAgentFlags
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run this machine's checkpoint agent: trainers save and restore through it",
		Long: `agent runs the node checkpoint agent. Trainer ranks on this machine connect to its Unix
socket (SCHOONER_CKPT_SOCKET), hand over each checkpoint through shared memory, and go on
training while the agent persists it (several checkpoints in flight, committed atomically in
<dir>/rank-NNNNN) and uploads committed steps to --store so a replacement machine can restore.

Modes: local (disk only), remote (no local disk: shards go from memory to the store) and both
(the default with --store). With --watch (or an endpoint flag) the agent polls the instance
metadata every second; on a spot preemption notice it tells trainers to checkpoint now and
uploads that emergency checkpoint first, or the newest committed step when the emergency one
cannot reach the store before the deadline.

On SIGINT or SIGTERM the agent stops accepting, lets handed-over saves commit, and flushes
uploads for at most --flush-timeout. The protocol is in docs/checkpoints.md ("Node agent").

  schooner ckpt agent --dir /var/lib/schooner/ckpt --socket /run/schooner/ckpt.sock
  schooner ckpt agent --dir /nvme/ckpt --socket /run/schooner/ckpt.sock \
      --store s3://ckpts/job-7 --watch aws
  schooner ckpt agent --mode remote --socket /tmp/ckpt.sock --store file:///mnt/nfs/job-7 \
      --gce-metadata http://127.0.0.1:8090/vm/my-vm`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := ckptLogger(cmd, g)
			if err != nil {
				return err
			}
			f.opts.Logger = log
			return runCkptAgent(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.opts.Dir, "dir", "", "local checkpoint root (one engine directory per rank); not used in remote mode")
	fl.StringVar(&f.socket, "socket", defaultCkptSocket, "Unix socket trainers connect to")
	fl.StringVar(&f.storeURL, "store", "", "object store for durable copies: s3://bucket/prefix?endpoint=..., file:///dir")
	fl.StringVar(&f.mode, "mode", "", "local, remote or both (default: both with --store, local without)")
	fl.IntVar(&f.opts.Retain, "retain", 0, "durable steps kept in the store (0: the remote tier's default)")
	fl.IntVar(&f.opts.MaxInFlight, "max-in-flight", 3, "checkpoints of a rank persisted (or, in remote mode, held for upload) at once")
	fl.Int64Var(&f.opts.StagingBytes, "staging-bytes", 0, "staging memory of each rank's engine (0: the engine's default, 1 GiB)")
	fl.BoolVar(&f.opts.DirectIO, "direct-io", true, "write checkpoint data with O_DIRECT where the file system supports it")
	fl.IntVar(&f.opts.UploadConcurrency, "upload-concurrency", 0, "shards uploaded at once (0: the uploader's default)")
	fl.StringVar(&f.opts.ShmDir, "shm-dir", agent.DefaultShmDir(), "directory of the shared-memory files trainers and agent map")
	f.notices.add(fl)
	fl.DurationVar(&f.flushTimeout, "flush-timeout", 30*time.Second, "how long a stopping agent keeps uploading")
	return cmd
}

// runCkptAgent runs the agent until the context ends or a signal arrives.
func runCkptAgent(ctx context.Context, f ckptAgentFlags) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.mode != "" {
		m, err := agent.ParseMode(f.mode)
		if err != nil {
			return err
		}
		f.opts.Mode = m
	}
	if f.storeURL != "" {
		st, err := store.Open(ctx, f.storeURL, store.WithLogger(f.opts.Logger))
		if err != nil {
			return fmt.Errorf("opening store: %w", err)
		}
		f.opts.Store = st
	}
	w, err := f.notices.watcher()
	if err != nil {
		return err
	}
	if w != nil {
		f.opts.Watcher = noticeWatcher(w)
	}
	a, err := agent.New(f.opts)
	if err != nil {
		return err
	}
	l, err := agent.Listen(f.socket)
	if err != nil {
		_ = a.Close()
		return err
	}
	served := make(chan error, 1)
	go func() { served <- a.Serve(l) }()
	select {
	case err = <-served:
	case <-ctx.Done():
		f.opts.Logger.Info().Dur("flush_timeout", f.flushTimeout).Msg("stopping checkpoint agent")
	}
	sctx, cancel := context.WithTimeout(context.Background(), f.flushTimeout)
	defer cancel()
	return errors.Join(err, a.Shutdown(sctx), removeSocket(f.socket))
}

// noticeWatcher adapts the cloud's interruption watcher to the checkpoint agent's Watcher (the
// agent knows no cloud).
func noticeWatcher(w cloud.InterruptionWatcher) agent.Watcher {
	return agent.WatcherFunc(func(ctx context.Context) (time.Time, bool, error) {
		intr, err := w.Poll(ctx)
		if err != nil || intr == nil {
			return time.Time{}, false, err
		}
		return intr.Deadline, true, nil
	})
}

func removeSocket(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing socket %s: %w", path, err)
	}
	return nil
}

func newCkptAgentStatusCommand() *cobra.Command {
	var socket string
	cmd := &cobra.Command{
		Use:   "agent-status",
		Short: "Print what this machine's checkpoint agent holds and is doing, as JSON",
		Long: `agent-status asks the checkpoint agent on --socket for its status: each rank's newest
committed step and saves in flight, the steps durable in the store, the upload backlog and
bandwidth, and the preemption notice and emergency decision if any.

  schooner ckpt agent-status --socket /run/schooner/ckpt.sock`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			c, err := agent.Dial(ctx, socket)
			if err != nil {
				return err
			}
			defer c.Close()
			s, err := c.Status(ctx)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(s)
		},
	}
	cmd.Flags().StringVar(&socket, "socket", defaultCkptSocket, "Unix socket of the agent")
	return cmd
}
