package cloud

import "context"

// Provider is the narrow interface schooner needs from a cloud. Implementations classify
// their own error codes into the typed errors of errors.go in one place, so callers decide
// with errors.Is and never match provider strings.
type Provider interface {
	// Name is "aws", "gcp" or "sim".
	Name() string
	// Offerings lists what could be bought, with prices and any capacity hint.
	Offerings(ctx context.Context, f OfferingFilter) ([]Offering, error)
	// Create launches instances. On partial fulfilment it returns the instances it got and
	// an error that wraps ErrInsufficientCapacity for the rest.
	Create(ctx context.Context, req CreateRequest) ([]Instance, error)
	// Describe returns the named instances; ids the provider no longer knows are omitted,
	// which for a terminated instance is the same as StateTerminated.
	Describe(ctx context.Context, ids []string) ([]Instance, error)
	// Terminate stops and releases instances. Unknown or already terminated ids are fine.
	Terminate(ctx context.Context, ids []string) error
	// List returns instances (not yet terminated) carrying every given tag.
	List(ctx context.Context, tags map[string]string) ([]Instance, error)
}

// InterruptionWatcher is what runs on the instance itself: AWS instance metadata
// (spot/instance-action) or the GCE metadata server (instance/preempted). It is polled by the
// node agent so a notice reaches the job within seconds, long before the control plane would
// see the instance disappear.
type InterruptionWatcher interface {
	// Poll returns the pending interruption, or nil when none is announced.
	Poll(ctx context.Context) (*Interruption, error)
}
