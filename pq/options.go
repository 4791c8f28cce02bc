package pq

import (
	"runtime"
	"time"
)

// Mode says who executes operations on the backbone.
type Mode int32

const (
	// Adaptive lets the classifier pick Direct or Delegate from the measured load. It is the
	// zero value because it is what the package is for.
	Adaptive Mode = iota
	// Direct: every caller operates on the MultiQueue itself (SmartPQ's NUMA-oblivious mode).
	Direct
	// Delegate: callers post requests to a few server goroutines that operate on the
	// MultiQueue for them (SmartPQ's Nuddle mode), so fewer threads touch the shared lines.
	Delegate
)

// String names the mode as the bench and logs print it.
func (m Mode) String() string {
	switch m {
	case Adaptive:
		return "adaptive"
	case Direct:
		return "direct"
	case Delegate:
		return "delegate"
	}
	return "mode(?)"
}

// Options configure a Queue. The zero value is a good default: adaptive, sized from
// GOMAXPROCS, servers pinned.
type Options struct {
	// Mode is the starting policy: Adaptive, or Direct/Delegate to force one mode.
	Mode Mode
	// Shards is the number of sub-heaps of the MultiQueue; default 2×GOMAXPROCS (the c=2 of
	// the MultiQueue paper). 1 makes DeleteMin strict.
	Shards int
	// Servers is the number of delegation servers; default GOMAXPROCS/8, at least 1. The
	// controller never picks Delegate when GOMAXPROCS is not above Servers: a server without
	// a P of its own turns every request into a scheduler handoff.
	Servers int
	// SlotsPerServer is each server's request group; default enough for every P to have a
	// request in flight: max(8, 2×GOMAXPROCS/Servers).
	SlotsPerServer int
	// NoPin leaves servers unpinned. By default each is locked to an OS thread and that
	// thread bound to one allowed CPU (Linux sched_setaffinity), as Nuddle pins its servers.
	NoPin bool
	// Spin is how many polls a waiting client makes before it starts yielding. Default 256.
	Spin int
	// ServerSpin is how many idle sweeps of its slots a server makes before it parks. Long
	// spinning keeps a server hot, which pays when it has a CPU to itself (Nuddle dedicates
	// cores to servers); with few Ps a spinning server takes a P that clients need, so the
	// default is 64×Spin from GOMAXPROCS 8 up and Spin below.
	ServerSpin int
	// Window is the length of one measurement window of the adaptive controller; default
	// 100ms (SmartPQ used one second on a machine with a steadier load).
	Window time.Duration
	// Hold is how many consecutive windows must agree before the mode changes; default 3.
	Hold int
	// Classify replaces the generated decision tree (tests and experiments).
	Classify func(Features) Class

	// minOps overrides minWindowOps, for tests that run delegation on too few cores to
	// fill a window.
	minOps float64
	// samples overrides targetSamplesPerWindow, for tests that need the sampling rate to
	// back off at the operation rates of the race detector.
	samples float64
}

// pinned is the inverse of NoPin, for readability at the use site.
func (o Options) pinned() bool { return !o.NoPin }

func (o Options) withDefaults() Options {
	p := runtime.GOMAXPROCS(0)
	if o.Shards <= 0 {
		o.Shards = 2 * p
	}
	if o.Servers <= 0 {
		o.Servers = max(1, p/8)
	}
	if o.SlotsPerServer <= 0 {
		o.SlotsPerServer = max(8, 2*p/o.Servers)
	}
	if o.Spin <= 0 {
		o.Spin = 256
	}
	if o.ServerSpin <= 0 {
		o.ServerSpin = o.Spin
		if p >= 8 {
			o.ServerSpin = 64 * o.Spin
		}
	}
	if o.Window <= 0 {
		o.Window = 100 * time.Millisecond
	}
	if o.Hold <= 0 {
		o.Hold = 3
	}
	if o.minOps <= 0 {
		o.minOps = minWindowOps
	}
	if o.samples <= 0 {
		o.samples = targetSamplesPerWindow
	}
	if o.Classify == nil {
		o.Classify = Classify
	}
	return o
}
