package main

import (
	"bufio"
	"encoding/json"
	"expvar"
	"math"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
)

// rssParts is where the resident set is, per /proc/self/status: anonymous pages (the Go heap,
// stacks, runtime metadata, memory mapped by modernc.org/libc for SQLite, written data pages),
// file-backed pages (mostly the binary's code and read-only data touched so far: the kernel
// can drop and re-read them, the program does not hold them) and shared memory.
type rssParts struct {
	RSS, Anon, File, Shmem float64 // MiB
}

func readRSS() rssParts {
	var p rssParts
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return p
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		kib, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
		switch name {
		case "VmRSS":
			p.RSS = kib / 1024
		case "RssAnon":
			p.Anon = kib / 1024
		case "RssFile":
			p.File = kib / 1024
		case "RssShmem":
			p.Shmem = kib / 1024
		}
	}
	return p
}

// memClasses is the Go runtime's own account of the memory it mapped (runtime/metrics
// /memory/classes/*), in MiB. Total is everything the runtime mapped and has not returned;
// HeapReleased of it has been returned to the OS (not resident), so Total-HeapReleased bounds
// from above what of the anonymous RSS is the Go runtime's.
type memClasses struct {
	HeapObjects    float64 `json:"heap_objects"`  // live and not yet swept objects
	HeapUnused     float64 `json:"heap_unused"`   // in spans holding objects, not used by them (fragmentation)
	HeapFree       float64 `json:"heap_free"`     // free spans, still mapped, could be returned
	HeapReleased   float64 `json:"heap_released"` // free spans returned to the OS
	HeapStacks     float64 `json:"heap_stacks"`   // goroutine stacks, from the heap
	OSStacks       float64 `json:"os_stacks"`     // thread stacks from the OS
	MetadataOther  float64 `json:"metadata_other"`
	MSpanInuse     float64 `json:"mspan_inuse"`
	MSpanFree      float64 `json:"mspan_free"`
	MCacheInuse    float64 `json:"mcache_inuse"`
	MCacheFree     float64 `json:"mcache_free"`
	ProfileBuckets float64 `json:"profiling_buckets"`
	Other          float64 `json:"other"`
	Total          float64 `json:"total"`
}

// Resident is what of Total the runtime has not returned to the OS (an upper bound on its
// share of the anonymous RSS: mapped pages never touched are not resident).
func (c *memClasses) Resident() float64 { return c.Total - c.HeapReleased }

// Metadata is the runtime's metadata of every kind.
func (c *memClasses) Metadata() float64 {
	return c.MetadataOther + c.MSpanInuse + c.MSpanFree + c.MCacheInuse + c.MCacheFree
}

func readMemClasses() *memClasses {
	c := &memClasses{}
	fields := map[string]*float64{
		"/memory/classes/heap/objects:bytes":          &c.HeapObjects,
		"/memory/classes/heap/unused:bytes":           &c.HeapUnused,
		"/memory/classes/heap/free:bytes":             &c.HeapFree,
		"/memory/classes/heap/released:bytes":         &c.HeapReleased,
		"/memory/classes/heap/stacks:bytes":           &c.HeapStacks,
		"/memory/classes/os-stacks:bytes":             &c.OSStacks,
		"/memory/classes/metadata/other:bytes":        &c.MetadataOther,
		"/memory/classes/metadata/mspan/inuse:bytes":  &c.MSpanInuse,
		"/memory/classes/metadata/mspan/free:bytes":   &c.MSpanFree,
		"/memory/classes/metadata/mcache/inuse:bytes": &c.MCacheInuse,
		"/memory/classes/metadata/mcache/free:bytes":  &c.MCacheFree,
		"/memory/classes/profiling/buckets:bytes":     &c.ProfileBuckets,
		"/memory/classes/other:bytes":                 &c.Other,
		"/memory/classes/total:bytes":                 &c.Total,
	}
	samples := make([]metrics.Sample, 0, len(fields))
	for name := range fields {
		samples = append(samples, metrics.Sample{Name: name})
	}
	metrics.Read(samples)
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			*fields[s.Name] = float64(s.Value.Uint64()) / (1 << 20)
		}
	}
	return c
}

// libcMem is what modernc.org/libc's allocator (malloc for the pure-Go SQLite of the embedded
// server) has mapped from the OS, outside the Go heap. The allocator counts only when built
// with -tags 'libc.memexpvar memory.counters', which also publishes the counts as the expvar
// "memory.allocator"; without those tags it is nil.
type libcMem struct {
	MappedMiB float64 `json:"mapped_mib"` // bytes the allocator holds mapped (memory.Allocator.Bytes)
	Mmaps     int     `json:"mmaps"`
	Allocs    int     `json:"allocs"` // live allocations
}

func readLibc() *libcMem {
	v := expvar.Get("memory.allocator")
	if v == nil {
		return nil
	}
	var st struct{ Allocs, Bytes, Mmaps int }
	if json.Unmarshal([]byte(v.String()), &st) != nil || st.Mmaps == 0 {
		return nil
	}
	return &libcMem{MappedMiB: float64(st.Bytes) / (1 << 20), Mmaps: st.Mmaps, Allocs: st.Allocs}
}

// gcSettings is the collector's GOGC and soft memory limit (MiB, 0 when there is none).
func gcSettings() (gogc uint64, limitMiB float64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		gogc = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 && s[1].Value.Uint64() < math.MaxInt64 {
		limitMiB = float64(s[1].Value.Uint64()) / (1 << 20)
	}
	return gogc, limitMiB
}
