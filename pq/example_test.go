package pq_test

import (
	"fmt"

	"github.com/schooner-ml/schooner/pq"
)

// A one-shard queue is strict: DeleteMin returns the minimum, equal keys in insertion order.
// Leave Shards at its default for a queue that scales with cores and returns a near-minimum.
func Example() {
	q := pq.New[int64, string](pq.Options{Shards: 1})
	defer q.Close()
	q.Insert(30, "third")
	q.Insert(10, "first")
	q.Insert(20, "second")
	q.Insert(10, "first, again")
	for {
		k, v, ok := q.DeleteMin()
		if !ok {
			break
		}
		fmt.Println(k, v)
	}
	// Output:
	// 10 first
	// 10 first, again
	// 20 second
	// 30 third
}
