package main

import (
	"cmp"
	"fmt"
	"io"
	"sort"
	"strings"
)

const mib = 1 << 20

func report(w io.Writer, a analysis, top, frames int) {
	fmt.Fprintf(w, "heap dump of %s: %d live objects in %d spans\n", a.goVersion, a.objects, a.spans)
	fmt.Fprintf(w, "rebuilt spans %.1f MiB, live %.1f MiB, free in them %.1f MiB (the runtime: HeapInuse %.1f MiB − HeapAlloc %.1f MiB = %.1f MiB)\n",
		float64(a.spanBytes)/mib, float64(a.live)/mib, float64(a.spanBytes-a.live)/mib,
		float64(a.heapInuse)/mib, float64(a.heapAlloc)/mib, float64(a.heapInuse-min(a.heapAlloc, a.heapInuse))/mib)
	fmt.Fprintf(w, "spans at most a quarter full: %.1f MiB holding %.1f MiB of live objects\n",
		float64(a.lowSpanBytes)/mib, float64(a.lowSpanLiveBytes)/mib)
	if a.objects > 0 {
		fmt.Fprintf(w, "objects with an allocation stack: %d of %d (%.0f%%)\n", a.sampled, a.objects, 100*float64(a.sampled)/float64(a.objects))
	}
	if len(a.unsampledBySize) > 0 {
		fmt.Fprintf(w, "objects without one, by slot size: %s\n", topCounts(a.unsampledBySize, 6, func(size uint64, n int) string { return fmt.Sprintf("%d B ×%d", size, n) }, ", "))
	}

	fmt.Fprintf(w, "\nby owner (schooner's packages, other modules, the standard library), free span bytes charged:\n")
	for _, g := range groups(a.sites) {
		fmt.Fprintf(w, "%8.2f MiB free charged %8.2f MiB live %9d objects  %s\n", g.charged/mib, g.live/mib, g.objects, g.key)
	}

	fmt.Fprintf(w, "\nsize classes by free bytes in their spans:\n%8s %8s %9s %10s %10s %10s %12s\n",
		"size", "spans", "objects", "span MiB", "live MiB", "free MiB", "≤¼-full spans")
	for i, c := range a.classes {
		if i == top {
			break
		}
		fmt.Fprintf(w, "%8d %8d %9d %10.2f %10.2f %10.2f %12d\n", c.size, c.spans, c.objects,
			float64(c.spanBytes)/mib, float64(c.live)/mib, float64(c.spanBytes-c.live)/mib, c.lowSpans)
	}

	fmt.Fprintf(w, "\nallocation sites by the free span bytes charged to them (a span's free bytes split among its live objects):\n")
	for i, s := range a.sites {
		if i == top {
			break
		}
		fmt.Fprintf(w, "%2d. %7.2f MiB free charged, %7.2f MiB live, %7d objects (%d in ≤¼-full spans)  %s\n",
			i+1, s.charged/mib, s.live/mib, s.objects, s.lonely, s.key)
		if len(s.holders) > 0 {
			fmt.Fprintf(w, "      held by: %s\n", topCounts(s.holders, 3, func(site string, n int) string { return fmt.Sprintf("%s (%d)", site, n) }, "; "))
		}
		for j, f := range s.stack {
			if j == frames {
				break
			}
			fmt.Fprintf(w, "      %s  %s:%d\n", f.fn, shortPath(f.file), f.line)
		}
	}
}

// topCounts lists the n keys of by with the largest counts (ties by key), each as item
// formats it with its count, joined by sep.
func topCounts[K cmp.Ordered](by map[K]int, n int, item func(K, int) string, sep string) string {
	keys := make([]K, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return by[keys[i]] > by[keys[j]] || by[keys[i]] == by[keys[j]] && keys[i] < keys[j]
	})
	var parts []string
	for i, k := range keys {
		if i == n {
			break
		}
		parts = append(parts, item(k, by[k]))
	}
	return strings.Join(parts, sep)
}

// groups sums the sites by owner (owner), most charged first.
func groups(sites []*site) []site {
	by := map[string]*site{}
	for _, s := range sites {
		k := owner(s.key)
		g := by[k]
		if g == nil {
			g = &site{key: k}
			by[k] = g
		}
		g.objects += s.objects
		g.live += s.live
		g.charged += s.charged
	}
	out := make([]site, 0, len(by))
	for _, g := range by {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].charged > out[j].charged || out[i].charged == out[j].charged && out[i].key < out[j].key
	})
	return out
}

// owner names who a site's function belongs to: a schooner package, another module (its first
// two path elements: go.temporal.io/server, google.golang.org/grpc), or a standard package.
func owner(fn string) string {
	if strings.HasPrefix(fn, "(") {
		return fn
	}
	pkg := fn
	if i := strings.LastIndex(pkg, "/"); i >= 0 {
		if j := strings.Index(pkg[i:], "."); j >= 0 {
			pkg = pkg[:i+j]
		}
	} else if j := strings.Index(pkg, "."); j >= 0 {
		pkg = pkg[:j]
	}
	const ours = "github.com/schooner-ml/schooner/"
	if strings.HasPrefix(pkg, ours) {
		return pkg
	}
	parts := strings.Split(pkg, "/")
	if len(parts) > 2 {
		parts = parts[:2]
	}
	return strings.Join(parts, "/")
}

// shortPath keeps a source path's last three elements.
func shortPath(p string) string {
	parts := strings.Split(p, "/")
	if len(parts) > 3 {
		parts = parts[len(parts)-3:]
	}
	return strings.Join(parts, "/")
}
