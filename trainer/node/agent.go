package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/checkpoint/agent"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/training"
)

// startAgent starts the assignment's checkpoint agent on a fresh local directory and a Unix
// socket in a short temporary directory (socket paths are limited to about 100 bytes).
// cleanup stops it (graceful: let in-flight uploads finish for a short grace) and removes its
// local files.
func (s *Supervisor) startAgent(a training.Assignment, st store.Store, log zerolog.Logger) (*agent.Agent, string, func(graceful bool), error) {
	jobDir := filepath.Join(s.dataDir(), safeName(a.JobID))
	s.removeOldEpochs(jobDir, a.JobID, a.Epoch, log)
	// The directory of this epoch and rank is kept: after a crash of the node process it holds
	// committed steps the store may lack, which the new agent uploads before anything else.
	dir := filepath.Join(jobDir, "epoch-"+strconv.Itoa(a.Epoch), "rank-"+strconv.Itoa(a.Rank))
	if n := agent.SweepDead(os.TempDir(), sockDirPrefix); n > 0 {
		log.Info().Int("removed", n).Msg("removed socket directories of checkpoint agents that are gone")
	}
	ag, err := agent.New(agent.Options{Dir: dir, ShmDir: s.ShmDir, Store: st, Logger: log})
	if err != nil {
		return nil, "", nil, fmt.Errorf("starting the checkpoint agent of rank %d: %w", a.Rank, err)
	}
	sockDir, err := os.MkdirTemp("", sockDirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		_ = ag.Close()
		return nil, "", nil, fmt.Errorf("creating the checkpoint agent's socket directory: %w", err)
	}
	sock := filepath.Join(sockDir, "agent.sock")
	l, err := agent.Listen(sock)
	if err != nil {
		_ = ag.Close()
		_ = os.RemoveAll(sockDir)
		return nil, "", nil, fmt.Errorf("starting the checkpoint agent of rank %d: %w", a.Rank, err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := ag.Serve(l); err != nil {
			log.Warn().Err(err).Msg("checkpoint agent stopped serving")
		}
	}()
	cleanup := func(graceful bool) {
		if graceful {
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			if err := ag.Shutdown(sctx); err != nil {
				log.Warn().Err(err).Msg("checkpoint agent shut down with uploads unfinished")
			}
			cancel()
		} else {
			_ = ag.Close()
		}
		<-served
		_ = os.RemoveAll(sockDir)
		_ = os.RemoveAll(dir)
	}
	return ag, sock, cleanup, nil
}

// sockDirPrefix names the agents' socket directories in the temporary directory, followed by
// the pid of the process that made them, so one left by a killed node process is swept.
const sockDirPrefix = "schooner-ckpt-"

// openStore opens the job's checkpoint store, refusing file:// stores outside StoreRoots.
func (s *Supervisor) openStore(ctx context.Context, url string) (store.Store, error) {
	if err := store.Confine(url, s.storeRoots()); err != nil {
		return nil, badAssignment("checkpoint store: %v", err)
	}
	return store.Opener(s.OpenStore).Open(ctx, url)
}

// storeRoots are the directories file:// stores may use: StoreRoots, or
// store.DefaultRoots(the data directory).
func (s *Supervisor) storeRoots() []string {
	if s.StoreRoots != nil {
		return s.StoreRoots
	}
	return store.DefaultRoots(s.dataDir())
}

// removeOldEpochs deletes local tiers of earlier epochs of the job: a new plan restores from
// the remote store, and stale local steps would only take disk.
func (s *Supervisor) removeOldEpochs(jobDir, jobID string, epoch int, log zerolog.Logger) {
	entries, err := os.ReadDir(jobDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		n, ok := cutInt(e.Name(), "epoch-")
		if ok && n < epoch && !s.epochInUse(jobID, n) {
			if err := os.RemoveAll(filepath.Join(jobDir, e.Name())); err != nil {
				log.Warn().Err(err).Str("dir", e.Name()).Msg("removing an old epoch's checkpoints")
			}
		}
	}
}

func (s *Supervisor) dataDir() string {
	if s.DataDir != "" {
		return s.DataDir
	}
	return filepath.Join(os.TempDir(), "schooner-node-"+safeName(s.NodeID))
}

// safeName keeps a job or node id usable as one path element.
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || string(b) == "." || string(b) == ".." {
		return "_"
	}
	return string(b)
}

func cutInt(s, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}
