package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/schooner-ml/schooner/bench/internal/process"
)

// sample is what the process holds at one moment, after a garbage collection.
type sample struct {
	At           time.Time `json:"at"`
	RSSMiB       float64   `json:"rss_mib"`        // VmRSS of /proc/self/status
	HeapInuseMiB float64   `json:"heap_inuse_mib"` // runtime.MemStats.HeapInuse
	// HeapLiveMiB is the bytes of live objects (HeapAlloc after the collection); RSSFreedMiB
	// the RSS once the runtime returned every free page (debug.FreeOSMemory): what the
	// program keeps, apart from what the Go runtime holds on to for reuse.
	HeapLiveMiB  float64 `json:"heap_live_mib,omitempty"`
	RSSFreedMiB  float64 `json:"rss_freed_mib,omitempty"`
	HeapObjects  uint64  `json:"heap_objects"`    // live objects
	Goroutines   int     `json:"goroutines"`      // runtime.NumGoroutine
	CPUSeconds   float64 `json:"cpu_seconds"`     // user + system since the process began
	MetricSeries int     `json:"metric_series"`   // series the Prometheus registry exposes
	NodeWorkers  int     `json:"sim_node_agents"` // simulated node agents alive
	MarketEvents int64   `json:"market_events"`   // events in the simulated market's log

	// Where the memory is, read at the same moment as RSSFreedMiB in idle samples (after the
	// free pages were returned: RSSAnonMiB+RSSFileMiB+RSSShmemMiB is RSSFreedMiB) and as RSSMiB
	// in the others. Absent from runs recorded before they were added.
	RSSAnonMiB  float64     `json:"rss_anon_mib,omitempty"`  // RssAnon
	RSSFileMiB  float64     `json:"rss_file_mib,omitempty"`  // RssFile: mostly the binary's pages
	RSSShmemMiB float64     `json:"rss_shmem_mib,omitempty"` // RssShmem
	Classes     *memClasses `json:"mem_classes,omitempty"`   // runtime/metrics /memory/classes/*
	Libc        *libcMem    `json:"libc,omitempty"`          // SQLite's malloc, outside the Go heap
}

// breakdown records where the memory is now.
func (s *sample) breakdown() {
	p := readRSS()
	s.RSSAnonMiB, s.RSSFileMiB, s.RSSShmemMiB = p.Anon, p.File, p.Shmem
	s.Classes = readMemClasses()
	s.Libc = readLibc()
}

// takeSample collects garbage first, so heap and RSS are what is kept, not what is waiting.
func takeSample() sample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return sample{At: time.Now(), RSSMiB: rssMiB(), HeapInuseMiB: float64(ms.HeapInuse) / (1 << 20),
		HeapLiveMiB: float64(ms.HeapAlloc) / (1 << 20),
		HeapObjects: ms.HeapObjects, Goroutines: runtime.NumGoroutine(), CPUSeconds: process.CPUSeconds()}
}

// takeBusySample is takeSample with where the memory is.
func takeBusySample() sample {
	s := takeSample()
	s.breakdown()
	return s
}

// takeIdleSample is takeSample of an idle process, plus its RSS after the runtime returned
// its free pages to the OS (a long-idle process does so by itself, over minutes).
func takeIdleSample() sample {
	s := takeSample()
	debug.FreeOSMemory()
	s.RSSFreedMiB = rssMiB()
	s.breakdown()
	return s
}

// rssMiB reads VmRSS from /proc/self/status; 0 where there is none.
func rssMiB() float64 { return readRSS().RSS }

// idleCPU is the share of one core the process used over a window in which it ran nothing
// of its own: CPU seconds over wall seconds, in percent.
type idleCPU struct {
	WallSeconds float64 `json:"wall_seconds"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	Percent     float64 `json:"percent"`
}

func measureIdle(window time.Duration, during func()) idleCPU {
	c0, t0 := process.CPUSeconds(), time.Now()
	if during != nil {
		during()
	}
	time.Sleep(time.Until(t0.Add(window)))
	wall, cpu := time.Since(t0).Seconds(), process.CPUSeconds()-c0
	return idleCPU{WallSeconds: wall, CPUSeconds: cpu, Percent: 100 * cpu / wall}
}

// writeHeapDump writes the runtime's heap dump of the process to path, after a collection so
// that every object in it is live.
func writeHeapDump(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	debug.WriteHeapDump(f.Fd())
	return f.Close()
}
