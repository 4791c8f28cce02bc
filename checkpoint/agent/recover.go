package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/schooner-ml/schooner/checkpoint"
)

// recover runs once at start in both and remote mode: it sweeps the leftovers of uploads a
// killed agent abandoned, then (both mode) resumes uploading the local steps it never got to
// the store. Without it a replacement machine would restore an older step than the one this
// machine committed, and the partial objects would stay forever (retention cannot see them).
func (a *Agent) recover() {
	defer a.bg.Done()
	if r, ok := a.remote.(*checkpoint.Remote); ok {
		if _, err := r.Sweep(a.ctx); err != nil {
			a.log.Warn().Err(err).Msg("removing the leftovers of abandoned uploads")
		}
	}
	if a.local != nil {
		a.resumeUploads()
	}
}

// resumeUploads queues, for every rank directory under Dir, the newest intact committed step
// when it is newer than the store's newest durable step. A shard the store already holds costs
// a re-put (S3: one HEAD request).
func (a *Agent) resumeUploads() {
	ranks, err := rankDirs(a.opts.Dir)
	if err != nil {
		a.log.Warn().Err(err).Msg("looking for local steps to upload")
		return
	}
	if len(ranks) == 0 {
		return
	}
	durable := int64(-1)
	steps, err := a.remote.DurableSteps(a.ctx)
	if err != nil {
		a.log.Warn().Err(err).Msg("listing the store's durable steps; uploading every local step again")
	}
	for _, s := range steps {
		durable = max(durable, s)
	}
	for _, rank := range ranks {
		if a.ctx.Err() != nil {
			return
		}
		a.resumeRank(rank, durable)
	}
}

// resumeRank queues rank's newest intact step if it is newer than durable.
func (a *Agent) resumeRank(rank int, durable int64) {
	a.opening.Lock()
	r, opened := a.rank(rank), false
	if r == nil {
		var err error
		if r, err = a.openRankLocked(rank, checkpoint.PlanInfo{}); err != nil {
			a.opening.Unlock()
			if !errors.Is(err, checkpoint.ErrClosed) {
				a.log.Warn().Err(err).Int("rank", rank).Msg("opening a rank to resume its upload")
			}
			return
		}
		opened = true
	}
	r.mu.Lock()
	var m *checkpoint.ShardMeta
	if r.latest != nil && r.latest.Step > durable && r.latest.Step > r.uploaded && r.queued[r.latest.Step] == nil {
		c := *r.latest
		m = &c
	}
	eng := r.eng
	r.mu.Unlock()
	if m != nil && eng != nil {
		a.log.Info().Int("rank", rank).Int64("step", m.Step).Int64("store_durable", durable).
			Msg("resuming the upload of a committed step the store does not hold")
		a.enqueue(r, newSlotSource(r, eng, *m))
	}
	a.opening.Unlock()
	if opened {
		a.releaseWhenIdle(r) // no connection: released once the upload is done
	}
}

// rankDirs lists the rank numbers that have a directory under root (checkpoint.RankDir).
func rankDirs(root string) ([]int, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		n, ok := strings.CutPrefix(e.Name(), "rank-")
		if !ok || !e.IsDir() {
			continue
		}
		if r, err := strconv.Atoi(n); err == nil && r >= 0 && checkpoint.RankDir(root, r) == filepath.Join(root, e.Name()) {
			out = append(out, r)
		}
	}
	return out, nil
}

// SweepDead removes the entries of dir named prefix…-<pid>-… (the first all-digit field after
// the prefix is the pid of the process that made it) whose process no longer exists: shared-
// memory files of clients and agents killed before they could clean up (the protocol's files
// are named schooner-ckpt-<kind>-<pid>-<random>), or temporary directories named the same way.
// An entry whose process is alive — or whose pid cannot be read — is kept, so a live client's
// buffer is never deleted. The agent must share the clients' pid namespace (one machine, no
// separate pid namespaces), as it does when the node's supervisor starts both. It returns the
// number of entries removed.
func SweepDead(dir, prefix string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		pid, ok := pidField(rest)
		if !ok || alive(pid) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err == nil {
			n++
		}
	}
	return n
}

// pidField is the first all-digit dash-separated field of s.
func pidField(s string) (int, bool) {
	for _, f := range strings.Split(s, "-") {
		if f == "" || strings.Trim(f, "0123456789") != "" {
			continue
		}
		pid, err := strconv.Atoi(f)
		return pid, err == nil && pid > 0
	}
	return 0, false
}

// alive reports whether a process with pid exists (one of another user counts).
func alive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
