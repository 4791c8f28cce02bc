// Command spans reads a Go heap dump (runtime/debug.WriteHeapDump, as `bench/soak -heapdump`
// writes one) and says where the heap's fragmentation is: which allocations keep spans that
// are mostly empty. The soak's idle process keeps tens of MiB of heap/unused after its jobs —
// free slots in spans that still hold a live object, which Go's non-moving collector cannot
// give back — and runtime/metrics says how much but not whose.
//
//	go run ./bench/soak/spans [-top 25] [-frames 6] FILE
//
// The dump lists every live object span by span with its size, and, when the process ran
// with runtime.MemProfileRate = 1, the allocation stack of each. The spans themselves are not
// in it, so they are rebuilt: an object of a one-page size class lies in the span of its 8 KiB
// page; objects of a larger class that follow each other in the dump at a multiple of their
// size, within the class's span length, share one. Each span's free bytes are then shared
// among its live objects, and summed by allocation site: a site that leaves one small object
// in an otherwise empty span is charged nearly the whole span.
package main

import (
	"fmt"
	"io"

	"github.com/schooner-ml/schooner/bench/internal/cli"
)

func main() { cli.Main("spans", run) }

func run(args []string, out io.Writer) error {
	fs := cli.FlagSet("spans", out)
	top := fs.Int("top", 25, "size classes and allocation sites to list (0: the owners only)")
	frames := fs.Int("frames", 6, "stack frames to print for each site")
	fs.Usage = func() {
		fmt.Fprintln(out, "usage: go run ./bench/soak/spans [-top N] [-frames N] HEAPDUMP")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("one heap dump to read, got %d arguments", fs.NArg())
	}
	d, err := readDump(fs.Arg(0))
	if err != nil {
		return err
	}
	classes, err := sizeClasses()
	if err != nil {
		return err
	}
	report(out, analyse(d, classes), *top, *frames)
	return nil
}
