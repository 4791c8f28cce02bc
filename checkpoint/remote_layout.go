package checkpoint

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The remote tier's layout under a store, one folder per step:
//
//	step-000000001200/rank-00000.data   the shard's data, byte for byte as in a local slot
//	step-000000001200/rank-00000.meta   its ShardMeta as JSON
//	step-000000001200/COMMIT            StepCommit, written once every rank's pair is stored
//
// Zero-padded numbers make lexical order step order, so a listing is already sorted.
const (
	remoteStepPrefix = "step-"
	remoteCommitName = "COMMIT"
	remoteDataSuffix = ".data"
	remoteMetaSuffix = ".meta"
	remoteRankPrefix = "rank-"
)

// remoteStepDir is the key prefix of a step's objects.
func remoteStepDir(step int64) string { return fmt.Sprintf("%s%012d/", remoteStepPrefix, step) }

// remoteDataKey is where rank's data of step is stored.
func remoteDataKey(step int64, rank int) string {
	return fmt.Sprintf("%s%s%05d%s", remoteStepDir(step), remoteRankPrefix, rank, remoteDataSuffix)
}

// remoteMetaKey is where rank's metadata of step is stored.
func remoteMetaKey(step int64, rank int) string {
	return fmt.Sprintf("%s%s%05d%s", remoteStepDir(step), remoteRankPrefix, rank, remoteMetaSuffix)
}

// remoteCommitKey is the object whose presence makes step durable.
func remoteCommitKey(step int64) string { return remoteStepDir(step) + remoteCommitName }

// remoteKey is a parsed object key of the layout.
type remoteKey struct {
	step   int64
	rank   int  // -1 for COMMIT
	data   bool // rank-N.data
	meta   bool // rank-N.meta
	commit bool
}

// parseRemoteKey recognizes the layout's keys; anything else (a person's notes, another tool's
// files) is not ours and is left alone.
func parseRemoteKey(key string) (remoteKey, bool) {
	dir, name, ok := strings.Cut(key, "/")
	if !ok || !strings.HasPrefix(dir, remoteStepPrefix) {
		return remoteKey{}, false
	}
	step, err := strconv.ParseInt(strings.TrimPrefix(dir, remoteStepPrefix), 10, 64)
	if err != nil || step < 0 {
		return remoteKey{}, false
	}
	k := remoteKey{step: step, rank: -1}
	switch {
	case name == remoteCommitName:
		k.commit = true
		return k, true
	case strings.HasPrefix(name, remoteRankPrefix) && strings.HasSuffix(name, remoteDataSuffix):
		k.data = true
		name = strings.TrimSuffix(name, remoteDataSuffix)
	case strings.HasPrefix(name, remoteRankPrefix) && strings.HasSuffix(name, remoteMetaSuffix):
		k.meta = true
		name = strings.TrimSuffix(name, remoteMetaSuffix)
	default:
		return remoteKey{}, false
	}
	rank, err := strconv.Atoi(strings.TrimPrefix(name, remoteRankPrefix))
	if err != nil || rank < 0 {
		return remoteKey{}, false
	}
	k.rank = rank
	return k, true
}

// StepCommit is the COMMIT object of a durable step: the plan and, per rank, the checksum of
// the metadata object, so a reader can tell a metadata object replaced after the commit.
type StepCommit struct {
	Format    int          `json:"format"`
	Step      int64        `json:"step"`
	World     int          `json:"world"`
	Plan      PlanInfo     `json:"plan"`
	Ranks     []RankCommit `json:"ranks"`
	Created   time.Time    `json:"created"`             // the newest shard's creation time
	Emergency bool         `json:"emergency,omitempty"` // some shard was taken on a preemption notice
}

// RankCommit is one rank's entry in a StepCommit.
type RankCommit struct {
	Rank       int    `json:"rank"`
	MetaCRC32C uint32 `json:"meta_crc32c"` // of the rank-N.meta object's bytes
	Size       int64  `json:"size"`        // data bytes
	CRC32C     uint32 `json:"crc32c"`      // of the data
}

// Size is the data bytes of every rank together.
func (c StepCommit) Size() int64 {
	var n int64
	for _, r := range c.Ranks {
		n += r.Size
	}
	return n
}
