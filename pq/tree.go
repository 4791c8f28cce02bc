package pq

// Features describe the load of one window, in the units the decision tree was trained on.
// The bench (bench/pq) writes the same four columns for every cell it measures, so training
// rows and live windows are comparable.
type Features struct {
	// Threads is the time-average number of callers inside an operation during the window
	// (Little's law over sampled latencies, see counters.go). For callers that do nothing but
	// queue operations it is their count; callers that do other work between operations
	// count for the fraction of their time spent in the queue.
	Threads float64
	// InsertShare is inserts / (inserts + deleteMins), from 0 to 1.
	InsertShare float64
	// LogSize is log2(1 + items) at the end of the window.
	LogSize float64
	// LogKeyRange is log2(1 + max - min) over sampled inserted keys, in the key's order hint
	// (see orderkey.go): for integer keys it is the integer range.
	LogKeyRange float64
	// Shards is the backbone's shard count (Options.Shards). It is fixed per queue, but it
	// decides how contended direct execution is: one shard (a strict queue) is one lock for
	// every caller, the case delegation was invented for.
	Shards float64
}

// Class is the classifier's verdict for one window.
type Class uint8

const (
	// Neutral: the modes are within the training threshold of each other; keep the current
	// mode. This third class is what stops a queue on the boundary from flapping.
	Neutral Class = iota
	// PreferDirect: callers should operate on the backbone themselves.
	PreferDirect
	// PreferDelegate: callers should post to the servers.
	PreferDelegate
)

// String names the verdict as the bench prints it.
func (c Class) String() string {
	switch c {
	case Neutral:
		return "neutral"
	case PreferDirect:
		return "direct"
	case PreferDelegate:
		return "delegate"
	}
	return "class(?)"
}

// Classify runs the decision tree in tree_gen.go, which bench/pq/train generates from
// benchmark rows. It is exported so that the benchmark can score the compiled-in tree on
// freshly measured rows (held out from its training data).
func Classify(f Features) Class { return classifyTree(f) }
