package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

const pageSize = 8192

// sizeClasses maps each small-object size class's element size to its span's pages, read
// from the Go tree that built this program (internal/runtime/gc/sizeclasses.go): the table is
// the runtime's own and changes between Go versions. Larger objects have a span each.
func sizeClasses() (map[uint64]uint64, error) {
	path := filepath.Join(runtime.GOROOT(), "src", "internal", "runtime", "gc", "sizeclasses.go")
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the runtime's size classes: %w", err)
	}
	sizes, err := uintArray(src, "SizeClassToSize")
	if err != nil {
		return nil, err
	}
	pages, err := uintArray(src, "SizeClassToNPages")
	if err != nil {
		return nil, err
	}
	if len(sizes) != len(pages) {
		return nil, fmt.Errorf("%s: %d sizes against %d page counts", path, len(sizes), len(pages))
	}
	m := map[uint64]uint64{}
	for i := 1; i < len(sizes); i++ {
		m[sizes[i]] = pages[i]
	}
	return m, nil
}

func uintArray(src []byte, name string) ([]uint64, error) {
	m := regexp.MustCompile(`var ` + name + ` = \[[^\]]*\]\w+\{([^}]*)\}`).FindSubmatch(src)
	if m == nil {
		return nil, fmt.Errorf("the runtime's size classes have no %s table", name)
	}
	var out []uint64
	for _, f := range strings.Split(string(m[1]), ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// span is one rebuilt span: its bytes and the live objects in it (indices into the dump).
type span struct {
	bytes   uint64
	objects []int
}

// spansOf rebuilds the spans from the dump's objects, which it lists span by span.
func spansOf(objs []object, classes map[uint64]uint64) []span {
	var out []span
	cur := -1        // the span being filled (an index into out), -1 after a large object
	var first uint64 // its first live object's address
	for i, o := range objs {
		npages, small := classes[o.size]
		if !small { // a large object: a span of its own, rounded up to whole pages
			out = append(out, span{bytes: (o.size + pageSize - 1) / pageSize * pageSize, objects: []int{i}})
			cur = -1
			continue
		}
		spanBytes := npages * pageSize
		same := cur >= 0 && objs[out[cur].objects[0]].size == o.size && o.addr > first
		if same && npages == 1 {
			same = o.addr/pageSize == first/pageSize
		} else if same {
			same = (o.addr-first)%o.size == 0 && o.addr-first < spanBytes
		}
		if !same {
			out = append(out, span{bytes: spanBytes})
			cur, first = len(out)-1, o.addr
		}
		out[cur].objects = append(out[cur].objects, i)
	}
	return out
}

// site is one allocation site's share of the heap: its live objects and bytes, and the free
// bytes of the spans it shares, each span's split evenly among its live objects.
type site struct {
	key     string
	stack   []frame
	objects int
	live    float64
	charged float64
	// lonely counts its objects in spans at most a quarter full.
	lonely int
	// holders counts, by the site of the objects pointing at them, this site's objects that
	// another site's object points at (what keeps them live).
	holders map[string]int
}

type classRow struct {
	size                      uint64
	spans, objects            int
	spanBytes, live, lowSpans uint64
}

type analysis struct {
	objects                        int
	spans                          int
	spanBytes, live                uint64
	heapInuse, heapAlloc           uint64
	goVersion                      string
	sampled                        int
	sites                          []*site
	classes                        []classRow
	lowSpanBytes, lowSpanLiveBytes uint64
	// unsampledBySize counts the objects with no recorded allocation stack by slot size.
	unsampledBySize map[uint64]int
}

// skipFrame says whether a frame only passes an allocation on (allocator, reflection,
// generic containers and encoders): a site is named after the first frame that is not.
func skipFrame(fn string) bool {
	for _, p := range []string{"runtime.", "internal/", "reflect.", "sync.", "strings.", "bytes.", "slices.", "maps.",
		"encoding/", "google.golang.org/protobuf/", "fmt.", "strconv.", "sort.", "unique.", "weak."} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

func siteKey(stack []frame) string {
	for _, f := range stack {
		if !skipFrame(f.fn) {
			return f.fn
		}
	}
	if len(stack) > 0 {
		return stack[0].fn
	}
	return "(no recorded allocation stack)"
}

func analyse(d *dump, classes map[uint64]uint64) analysis {
	a := analysis{objects: len(d.objects), heapInuse: d.heapInuse, heapAlloc: d.heapAlloc, goVersion: d.goVersion,
		unsampledBySize: map[uint64]int{}}
	spans := spansOf(d.objects, classes)
	a.spans = len(spans)
	bySite := map[string]*site{}
	objSite := make([]*site, len(d.objects))
	byClass := map[uint64]*classRow{}
	for _, s := range spans {
		var live uint64
		for _, i := range s.objects {
			live += d.objects[i].size
		}
		a.spanBytes += s.bytes
		a.live += live
		free := float64(s.bytes - min(live, s.bytes))
		low := live*4 <= s.bytes
		size := d.objects[s.objects[0]].size
		if _, small := classes[size]; small {
			c := byClass[size]
			if c == nil {
				c = &classRow{size: size}
				byClass[size] = c
			}
			c.spans++
			c.objects += len(s.objects)
			c.spanBytes += s.bytes
			c.live += live
			if low {
				c.lowSpans++
			}
		}
		if low {
			a.lowSpanBytes += s.bytes
			a.lowSpanLiveBytes += live
		}
		for _, i := range s.objects {
			o := d.objects[i]
			bucket, ok := sampleOf(d.samples, o)
			stack := d.stacks[bucket]
			if ok {
				a.sampled++
			} else {
				a.unsampledBySize[o.size]++
			}
			k := siteKey(stack)
			st := bySite[k]
			if st == nil {
				st = &site{key: k, stack: stack}
				bySite[k] = st
			}
			objSite[i] = st
			st.objects++
			st.live += float64(o.size)
			st.charged += free / float64(len(s.objects))
			if low {
				st.lonely++
			}
		}
	}
	for _, s := range bySite {
		a.sites = append(a.sites, s)
	}
	countHolders(d.objects, objSite)
	sort.Slice(a.sites, func(i, j int) bool {
		x, y := a.sites[i], a.sites[j]
		return x.charged > y.charged || x.charged == y.charged && x.key < y.key
	})
	for _, c := range byClass {
		a.classes = append(a.classes, *c)
	}
	sort.Slice(a.classes, func(i, j int) bool {
		fi, fj := a.classes[i].spanBytes-a.classes[i].live, a.classes[j].spanBytes-a.classes[j].live
		return fi > fj || fi == fj && a.classes[i].size < a.classes[j].size
	})
	return a
}

// countHolders fills each site's holders from the objects' pointer fields: for an object
// pointed at by an object of another site, that site holds it (counted once per object and
// holding site).
func countHolders(objs []object, objSite []*site) {
	order := make([]int, len(objs))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool { return objs[order[i]].addr < objs[order[j]].addr })
	containing := func(p uint64) int {
		k := sort.Search(len(order), func(k int) bool { return objs[order[k]].addr > p }) - 1
		if k < 0 || p >= objs[order[k]].addr+objs[order[k]].size {
			return -1
		}
		return order[k]
	}
	seen := map[[2]int]bool{}
	for i, o := range objs {
		for _, p := range o.ptrs {
			j := containing(p)
			if j < 0 || j == i || objSite[j] == nil || objSite[i] == objSite[j] {
				continue
			}
			held, by := objSite[j], objSite[i]
			key := [2]int{j, i}
			if seen[key] {
				continue
			}
			seen[key] = true
			if held.holders == nil {
				held.holders = map[string]int{}
			}
			held.holders[by.key]++
		}
	}
}

// tinyBlock is the tiny allocator's block: pointer-free allocations under 16 bytes share one,
// each recorded at its own offset inside it.
const tinyBlock = 16

// sampleOf finds the profile bucket of an object's allocation: recorded at its address, or, in
// a tiny block, at the first recorded offset inside it.
func sampleOf(samples map[uint64]uint64, o object) (uint64, bool) {
	if b, ok := samples[o.addr]; ok {
		return b, true
	}
	if o.size == tinyBlock {
		for off := uint64(1); off < tinyBlock; off++ {
			if b, ok := samples[o.addr+off]; ok {
				return b, true
			}
		}
	}
	return 0, false
}
