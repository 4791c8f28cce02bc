package router

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/internal/defaults"
)

// StageAddr is where one pipeline stage's worker listens for the router: "host:port" for TCP
// or "unix:/path" for a unix socket.
type StageAddr struct {
	Addr string `json:"addr"`
	// Node names the machine, for status only.
	Node string `json:"node,omitempty"`
}

// Options configure a Router. Zero fields take the defaults named beside them.
type Options struct {
	// Model is the deployment's model id: the only one /v1/models lists and requests may name.
	Model string
	// Deployment is sent in every hello.
	Deployment string
	// MaxQueue bounds the requests waiting for dispatch; a request over it gets 429 (256).
	MaxQueue int
	// MaxRunning bounds the requests submitted to the workers at once (0: no bound; the
	// worker's "overloaded" answer pushes a request back into the queue).
	MaxRunning int
	// ContextLength bounds prompt tokens + max_tokens (4096).
	ContextLength int
	// DefaultMaxTokens is max_tokens when a request leaves it out (16, as OpenAI's).
	DefaultMaxTokens int
	// VocabSize, when set, bounds the token ids of array prompts.
	VocabSize int
	// MaxBodyBytes bounds a request body; a larger one gets 413 (1 MiB).
	MaxBodyBytes int64
	// PauseLimit is how long a request whose worker is lost waits for a replacement before it
	// fails with a 503 (60 s).
	PauseLimit time.Duration
	// RetryAfter is the Retry-After of a 429 (1 s).
	RetryAfter time.Duration
	// PingInterval paces pings on every stage connection; a connection that stays silent for
	// three intervals is declared lost (1 s, DéjàVu's heartbeat).
	PingInterval time.Duration
	// DialTimeout bounds a connection attempt with its hello (5 s).
	DialTimeout time.Duration
	// ReconnectBackoff is the first delay between connection attempts to a stage that cannot
	// be reached; it doubles up to 20 times itself (100 ms).
	ReconnectBackoff time.Duration
	// KeepAlive is the interval of SSE comment lines on a stream with nothing to send, so
	// proxies keep a paused stream open (15 s).
	KeepAlive time.Duration
	// Tokenizer turns text prompts into token ids and tokens into text (Bytes).
	Tokenizer Tokenizer
	// Queue orders waiting requests (a heap ordered by arrival). It serves one Router: a
	// Pool makes a router per replica from one Options, so give it NewQueue instead.
	Queue Queue
	// NewQueue makes each router's queue when Queue is nil (NewHeapQueue when nil too);
	// NewPQueue is the concurrent priority queue of package pq. A queue with a Close method
	// is closed with its router.
	NewQueue func() Queue
	// Log receives connection and failover events (none).
	Log *zerolog.Logger
	// OnDispatch, when set, is told of every submit of a queued request to the first stage:
	// the request's id (the completion's id) and how long it waited since it was admitted,
	// its queueing delay, which nothing else exposes (bench/routerq reads it). A request an
	// overloaded worker pushed back is told again at its next submit, with its whole wait.
	// It runs on the dispatch loop, outside the router's lock: keep it short.
	OnDispatch func(id string, queued time.Duration)
	// Prefill, when set, makes this router the token pool of a disaggregated deployment
	// (DéjàVu's prompt–token disaggregation, disagg.go): every completion is first sent to
	// Prefill's pipeline (the prompt pool) for its prompt and token 0, whose KV cache that
	// pipeline streams to its KV-cache holder as it computes it; then this router's pipeline
	// (the token pool) restores that cache from the same holder and decodes the rest. Both
	// pipelines must replicate to the same holders under the same deployment and stage
	// numbers. Prefill serves no HTTP of its own here.
	Prefill *Router
	// PickPrefill, when set and Prefill is nil, chooses the prompt pool per completion: a Pool
	// gives each decode replica's router one that picks among the prefill replicas feeding
	// that replica (they stream prompts to its holders). Nil from it means none feeds the
	// replica now, and the completion is prefilled where it is decoded.
	PickPrefill func() *Router
}

func (o Options) withDefaults() Options {
	defaults.Positive(&o.MaxQueue, 256)
	defaults.Positive(&o.ContextLength, 4096)
	defaults.Positive(&o.DefaultMaxTokens, 16)
	defaults.Positive(&o.MaxBodyBytes, 1<<20)
	defaults.Positive(&o.PauseLimit, 60*time.Second)
	defaults.Positive(&o.RetryAfter, time.Second)
	defaults.Positive(&o.PingInterval, time.Second)
	defaults.Positive(&o.DialTimeout, 5*time.Second)
	defaults.Positive(&o.ReconnectBackoff, 100*time.Millisecond)
	defaults.Positive(&o.KeepAlive, 15*time.Second)
	if o.Tokenizer == nil {
		o.Tokenizer = Bytes{}
	}
	if o.Queue == nil && o.NewQueue != nil {
		o.Queue = o.NewQueue()
	}
	if o.Queue == nil {
		o.Queue = NewHeapQueue()
	}
	if o.Log == nil {
		nop := zerolog.Nop()
		o.Log = &nop
	}
	return o
}
