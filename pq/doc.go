// Package pq is an adaptive concurrent priority queue in the spirit of SmartPQ (Giannoula et
// al., CF'19): one shared backbone, two ways of executing operations on it, and a decision tree
// that picks the way from the measured load.
//
// # Backbone: a MultiQueue, and what DeleteMin promises
//
// Items live in a MultiQueue: c·p sequential binary heaps (Options.Shards, default
// 2×GOMAXPROCS), each behind its own mutex. Insert puts the item in a random heap (TryLock, so
// a busy heap is skipped rather than waited for). DeleteMin reads the published minima of two
// random heaps without locking, locks the one with the smaller minimum and pops it. Threads
// rarely meet on a lock, which is why the structure scales with cores where one heap behind
// one mutex collapses.
//
// DeleteMin is therefore relaxed, not strict. It returns a present item, but not necessarily
// the minimum: its rank error (how many present items have a smaller key) is O(n) in
// expectation and O(n log n) with high probability for n shards, for the two-choice process
// run sequentially (Alistarh et al., "The Power of Choice in Priority Scheduling", PODC'17);
// concurrent operations add the operations in flight. With Shards: 1 the queue is a locked
// heap and DeleteMin is strict and linearizable. Equal keys leave a heap in the order they
// entered it, so a one-shard queue is also FIFO among equal keys, like a sequence-numbered
// container/heap. No item is ever lost or returned twice.
// ok == false means every heap was seen empty at some instant during the call: with no
// concurrent Insert, the queue was empty. Len sums the heaps' lengths.
//
// Why relaxed: the intended consumers in schooner (the serving router's request queue,
// checkpoint and KV-cache work queues) order by arrival time or urgency, where serving the
// 30th-oldest request before the oldest costs little, while a strict queue's single minimum
// is a hot spot every consumer fights over. A caller that needs strict order sets
// Shards to 1 and keeps the rest.
//
// # Two modes on the same backbone
//
// Direct: the caller runs the operation on the MultiQueue (SmartPQ's NUMA-oblivious mode).
//
// Delegate: the caller writes the request into a free slot of one of a few server goroutines
// (Options.Servers) and spins, then yields, on that slot's own atomic flag until the server
// has run it (SmartPQ's Nuddle mode). Slots are padded to two cache lines; there is no
// channel per operation. Servers are locked to OS threads and, on Linux, pinned with
// sched_setaffinity to the last CPUs of the process's allowed set (Options.NoPin turns that
// off). With fewer threads touching the heaps and their locks, delegation can win when many
// callers hammer a few hot lines (in SmartPQ's measurements, deleteMin-heavy loads) and loses
// when operations spread well (insert-heavy ones); here the trained tree decides. Idle servers park on a one-slot wake
// channel, so a queue in Direct mode costs no CPU for its servers.
//
// # Switching without a pause
//
// The mode is one atomic word. Because both modes operate on the same MultiQueue, callers in
// the old mode and callers in the new one can run at the same time: a switch is a store; the
// servers keep serving whatever was posted before it; no operation takes a global lock or
// waits for anyone. (The rare control actions, Force, the controller's switch and Close, are
// ordered among themselves by a mutex that operations never touch.) If every slot is busy, or
// the servers have been closed, a caller simply runs its operation directly, so delegation
// never blocks progress.
//
// # Choosing the mode
//
// In Adaptive mode (the default) a few operations are sampled onto one of 16 padded counter
// stripes: their kind, (one in four of them) their latency and (for inserts) their key, each
// weighted by the sampling rate; the others write nothing shared. The rate follows the load:
// one operation in 128 at a low rate, down to one in 16384 at hundreds of millions of
// operations a second, so that a window holds about 2,000 samples (counters.go). A controller
// goroutine closes a window every Options.Window, sets the next window's sampling rate and
// computes Features: active threads (by Little's law: sampled latency summed and scaled, over
// the window's length, which is the time-average number of callers inside an operation),
// insert share, log2 size, log2 key range, and the shard count. The decision tree in tree_gen.go, trained offline by
// bench/pq/train on rows measured by bench/pq, answers PreferDirect, PreferDelegate or
// Neutral (the modes are within the training threshold of each other). The mode changes only
// when the same answer comes Options.Hold windows in a row, and Neutral keeps the current
// mode: together these stop a queue on a boundary from flapping, as SmartPQ's neutral class
// does. An idle window (few operations, nobody inside the queue) votes Neutral; the
// controller never delegates when GOMAXPROCS leaves the servers no P of their own.
//
// Where delegation can win on one socket: contention on a few locks. With the default shard
// count callers rarely meet, and direct execution is hard to beat; with few shards (Shards: 1,
// a strict queue) every caller fights for one lock, and a server that holds it alone, with
// the heap hot in its cache, is the classic remedy. NUMA effects, SmartPQ's main motive, need
// a multi-socket machine to show.
//
// pq is a domain package: no Temporal, no I/O.
package pq
