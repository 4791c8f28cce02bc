package agent

import (
	"time"

	"github.com/schooner-ml/schooner/checkpoint"
)

// The operations of the socket protocol. Each is one JSON object on one line, answered by one
// Response on one line; docs/checkpoints.md ("Node agent") is the reference for clients in other
// languages.
const (
	OpHello  = "hello"  // bind the connection to a rank and open that rank's engine
	OpSave   = "save"   // hand over a shard laid out in a shared-memory file
	OpWait   = "wait"   // block until a step is committed locally or durable remotely
	OpLoad   = "load"   // restore a step into a fresh shared-memory file
	OpStatus = "status" // what the agent holds and is doing
	OpPoll   = "poll"   // cheap: should the trainer checkpoint now?
	// OpReserve readies the rank's slots for shards of Bytes bytes after hello, so the first
	// saves do not pay for allocating and syncing the space.
	OpReserve = "reserve"
)

// Durability says how far a step must have got before Wait returns.
type Durability string

// The durability levels Wait accepts.
const (
	// DurableLocal is a step committed by the rank's local engine: it survives a crash of the
	// trainer or the agent, not the loss of the machine.
	DurableLocal Durability = "local"
	// DurableRemote is a step every rank of the plan has in object storage: it survives the
	// machine. In remote mode it is the only level and local means the same.
	DurableRemote Durability = "remote"
)

// Error codes a Response carries so clients can tell the common failures apart without parsing
// messages.
const (
	CodeBadRequest   = "bad_request"
	CodeNoCheckpoint = "no_checkpoint"
	CodeClosed       = "closed"
	CodeFailed       = "failed"
)

// Request is one request of the protocol. Which fields count depends on Op; the others are left
// out. One struct for every operation keeps clients in other languages to one dict.
type Request struct {
	Op string `json:"op"`

	// Rank is the caller's rank (hello), or whose shard to load (load; the hello rank when
	// absent).
	Rank *int `json:"rank,omitempty"`
	// World is the number of ranks of the plan (hello), used when Plan has no world size.
	World int `json:"world,omitempty"`
	// Plan is the parallel layout the rank runs under (hello), or the layout whose Stage to
	// select (load; the hello plan when absent).
	Plan *checkpoint.PlanInfo `json:"plan,omitempty"`

	// Step is the training step (save, wait) or the step to load, -1 for the newest durable one.
	Step int64 `json:"step"`

	// Shm is the shared-memory file the client wrote the shard into (save); Tensors locate each
	// tensor in it (offsets from the start of the file).
	Shm     string                  `json:"shm,omitempty"`
	Tensors []checkpoint.TensorMeta `json:"tensors,omitempty"`
	// Extra is the trainer's own small values stored with the shard (save).
	Extra map[string]string `json:"extra,omitempty"`
	// Emergency marks a save taken on a preemption notice (the agent also marks every save
	// after a notice by itself).
	Emergency bool `json:"emergency,omitempty"`

	// Durable is how durable the step must be before wait replies: "local" (default) or
	// "remote".
	Durable Durability `json:"durable,omitempty"`

	// Load selects what to restore: the tensors of one pipeline Stage of Plan, the layers
	// [Layers[0], Layers[1]) plus the tensors of no layer, All tensors of the step, or, when
	// none of these is given, the tensors rank Rank saved.
	Stage  *int  `json:"stage,omitempty"`
	Layers []int `json:"layers,omitempty"`
	All    bool  `json:"all,omitempty"`

	// Bytes is the shard size to reserve slots for (reserve).
	Bytes int64 `json:"bytes,omitempty"`
}

// Response is the answer to one Request. OK false comes with Error and Code.
type Response struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	Code  string `json:"code,omitempty"`

	// Hello: where the client creates its shared-memory files, the agent's mode, and the
	// rank's newest committed step (-1 for none).
	ShmDir string `json:"shm_dir,omitempty"`
	Mode   Mode   `json:"mode,omitempty"`
	Latest *int64 `json:"latest,omitempty"`

	// Step is the step saved (save), the step found durable at or past the one asked for
	// (wait), or the step loaded (load).
	Step      int64 `json:"step"`
	Emergency bool  `json:"emergency,omitempty"`

	// Load: the shared-memory file holding the tensors (the client removes it after reading),
	// its size, where each tensor lies in it, and the shard's plan and extra values.
	Shm     string                  `json:"shm,omitempty"`
	Size    int64                   `json:"size,omitempty"`
	Tensors []checkpoint.TensorMeta `json:"tensors,omitempty"`
	Extra   map[string]string       `json:"extra,omitempty"`
	Plan    *checkpoint.PlanInfo    `json:"plan,omitempty"`
	Source  string                  `json:"source,omitempty"`

	// Poll (and status): whether the trainer should checkpoint now, and the preemption
	// deadline when a notice arrived.
	CheckpointNow bool       `json:"checkpoint_now,omitempty"`
	Deadline      *time.Time `json:"deadline,omitempty"`

	// Status is the answer to status.
	Status *Status `json:"status,omitempty"`

	// Reserve: how many of the rank's slots hold a shard of the size asked for now (0 in
	// remote mode, which keeps no slots).
	Slots int `json:"slots,omitempty"`
}

// Status is what an agent holds and is doing, for people (schooner ckpt agent-status) and
// trainers.
type Status struct {
	Mode  Mode         `json:"mode"`
	Ranks []RankStatus `json:"ranks"`
	// RemoteDurable lists, newest first, the steps durable in object storage (empty without a
	// store, or when listing it failed: see RemoteError).
	RemoteDurable []int64 `json:"remote_durable,omitempty"`
	RemoteError   string  `json:"remote_error,omitempty"`
	// UploadBacklog is the number of shards waiting to be uploaded; UploadBandwidth the
	// uploader's recent throughput in bytes per second (0 before the first upload).
	UploadBacklog   int     `json:"upload_backlog"`
	UploadBandwidth float64 `json:"upload_bandwidth"`
	// Notice is the preemption notice, when one arrived.
	Notice *Notice `json:"notice,omitempty"`
	// Decision is the last emergency-upload decision, in words.
	Decision string `json:"decision,omitempty"`
}

// RankStatus is one rank's state on this agent.
type RankStatus struct {
	Rank int `json:"rank"`
	// Latest is the newest committed step (-1 for none); Saving the steps saved but not yet
	// committed.
	Latest int64   `json:"latest"`
	Saving []int64 `json:"saving,omitempty"`
	// EmergencyStep is the first step saved after the notice (-1 for none yet).
	EmergencyStep int64 `json:"emergency_step"`
}

// Notice is a preemption notice: the machine goes away at Deadline.
type Notice struct {
	Deadline time.Time `json:"deadline"`
	Received time.Time `json:"received"`
}
