package agent

import (
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/internal/defaults"
)

// Mode says where the agent keeps checkpoints.
type Mode string

// The modes of an agent.
const (
	// ModeLocal keeps checkpoints in the local engines only: fast, but lost with the machine.
	ModeLocal Mode = "local"
	// ModeRemote keeps nothing on the local disk: shards are encoded in memory and uploaded,
	// and a step is durable once it is in object storage. For machines without a usable disk.
	ModeRemote Mode = "remote"
	// ModeBoth commits locally, then uploads each committed shard: restores on the same machine
	// read the local copy, a replacement machine reads the remote one. The default with a store.
	ModeBoth Mode = "both"
)

// ParseMode accepts local, remote and both.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeLocal, ModeRemote, ModeBoth:
		return m, nil
	}
	return "", fmt.Errorf("unknown agent mode %q (want local, remote or both)", s)
}

// DefaultMaxRanks is Options.MaxRanks' default: far more ranks than one machine runs, far fewer
// engines than it takes to run the agent out of file descriptors.
const DefaultMaxRanks = 64

// Options configure an Agent. Dir is required unless Mode is remote; Store is required unless
// Mode is local.
type Options struct {
	// Dir is the local root: rank r's engine lives in checkpoint.RankDir(Dir, r).
	Dir string
	// ShmDir is where shared-memory files are created; DefaultShmDir() when empty.
	ShmDir string
	// Mode is local, remote or both; both when Store is set, local otherwise, when empty.
	Mode Mode
	// Store is the object store of the remote tier.
	Store store.Store
	// Retain is how many durable steps the remote tier keeps (older ones are pruned); 0 keeps
	// the remote tier's default.
	Retain int

	// MaxInFlight, Writers, ChunkSize, StagingBytes, KeepCommitted and DirectIO configure each
	// rank's engine (zero: the engine's defaults). In remote mode MaxInFlight also bounds the
	// shards of a rank held in memory waiting for upload.
	MaxInFlight   int
	Writers       int
	ChunkSize     int64
	StagingBytes  int64
	KeepCommitted int
	DirectIO      bool

	// MaxRanks bounds the rank engines open at once (default DefaultMaxRanks). A rank's engine
	// (its files and staging memory) is released once its last connection closed and its saves
	// committed and uploaded; a hello for one more rank beyond the bound is refused.
	MaxRanks int
	// StaleUploads is how long an upload's leftovers (S3 multipart uploads, temp files of a
	// file:// store) sit untouched before they count as abandoned — by a process killed
	// mid-upload — and are removed, at start and after each durable step (default
	// checkpoint.DefaultStaleAfter; negative keeps them). It must exceed the longest upload.
	StaleUploads time.Duration

	// UploadConcurrency is the number of shards uploaded at once (0: the uploader's default).
	UploadConcurrency int
	// AssumedBandwidth, in bytes per second, stands in for the uploader's measured bandwidth
	// before it has measured any (default 100 MB/s), when deciding whether an emergency shard
	// can reach the store before the deadline.
	AssumedBandwidth float64

	// Watcher, when set, is polled every WatchInterval (default 1 s) for a preemption notice:
	// the instance metadata of the cloud, adapted by the caller.
	Watcher       Watcher
	WatchInterval time.Duration

	// Now is the clock the deadline is compared with (default time.Now); the simulator's clock
	// in tests and simulated runs.
	Now func() time.Time
	// Logger receives the agent's logs.
	Logger zerolog.Logger
}

// withDefaults fills the zero fields and checks the combination.
func (o Options) withDefaults() (Options, error) {
	if o.Mode == "" {
		o.Mode = ModeLocal
		if o.Store != nil {
			o.Mode = ModeBoth
		}
	}
	if _, err := ParseMode(string(o.Mode)); err != nil {
		return o, err
	}
	if o.Mode != ModeRemote && o.Dir == "" {
		return o, fmt.Errorf("agent mode %s needs a local directory", o.Mode)
	}
	if o.Mode != ModeLocal && o.Store == nil {
		return o, fmt.Errorf("agent mode %s needs a store", o.Mode)
	}
	if o.ShmDir == "" {
		o.ShmDir = DefaultShmDir()
	}
	defaults.Positive(&o.MaxInFlight, 3)
	defaults.Positive(&o.MaxRanks, DefaultMaxRanks)
	defaults.Positive(&o.AssumedBandwidth, 100e6)
	defaults.Positive(&o.WatchInterval, time.Second)
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}
