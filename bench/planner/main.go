// Command planner times schooner's plan search on the scenarios of the Sailor paper and
// prints a Markdown table beside Sailor's published search times. Profiles and network
// measurements are Sailor's own, bundled in planner/profiles; prices are GCP on-demand as
// Sailor used them.
//
//	go run ./bench/planner [-runs 3] [-gbs 2048]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/profiles"
)

// GPU prices, USD per GPU-hour (GCP on demand, as in Sailor's cost experiments).
const (
	priceA100 = 3.67
	priceV100 = 2.55
	priceGH   = 11.06
)

// scenario is one of Sailor's search-time experiments.
type scenario struct {
	name   string
	model  string
	pools  []planner.Pool
	sailor float64 // Sailor's published search time, seconds
	upTo   bool    // Sailor's figure is an upper bound ("< 1 s")
}

func pool(g gpu.Type, zone string, gpus, perNode int, usd float64) planner.Pool {
	region := zone[:strings.LastIndex(zone, "-")]
	return planner.Pool{Provider: "gcp", Region: region, Zone: zone, InstanceType: fmt.Sprintf("%s-x%d", g, perNode),
		GPU: g, GPUsPerNode: perNode, GPUs: gpus, USDPerGPUHour: usd}
}

func scenarios() []scenario {
	const zone = "us-central1-a"
	mix := func(a, v int, sailor float64) scenario {
		return scenario{name: fmt.Sprintf("A100-40:V100-16 = %d:%d", a, v), model: "OPT-350", sailor: sailor,
			pools: []planner.Pool{pool(gpu.A100_40, zone, a, 4, priceA100), pool(gpu.V100, zone, v, 4, priceV100)}}
	}
	var zones []planner.Pool
	for _, z := range []string{"us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f", "us-west1-b"} {
		zones = append(zones, pool(gpu.A100_40, z, 256, 4, priceA100))
	}
	return []scenario{
		{name: "128 A100-40", model: "OPT-350", sailor: 1, upTo: true,
			pools: []planner.Pool{pool(gpu.A100_40, zone, 128, 4, priceA100)}},
		mix(32, 96, 1.6),
		mix(80, 240, 7.7),
		mix(128, 384, 17.4),
		{name: "5 zones × 256 A100-40", model: "GPT-Neo-2.7", sailor: 1.5, upTo: true, pools: zones},
		{name: "256 A100-40 (1 type)", model: "OPT-350", sailor: 0.3,
			pools: []planner.Pool{pool(gpu.A100_40, zone, 256, 4, priceA100)}},
		{name: "2 types × 256 (A100-40, V100-16)", model: "OPT-350", sailor: 6.2,
			pools: []planner.Pool{pool(gpu.A100_40, zone, 256, 4, priceA100), pool(gpu.V100, zone, 256, 4, priceV100)}},
		{name: "3 types × 256 (A100-40, V100-16, GH200-96)", model: "OPT-350", sailor: 4900,
			pools: []planner.Pool{pool(gpu.A100_40, zone, 256, 4, priceA100), pool(gpu.V100, zone, 256, 4, priceV100),
				pool(gpu.GH200, zone, 256, 1, priceGH)}},
	}
}

func main() {
	runs := flag.Int("runs", 3, "searches per scenario and objective; the median is reported")
	gbs := flag.Int("gbs", 2048, "global batch size")
	profilesDir := flag.String("profiles", "", "profiles directory (empty: the bundled Sailor data)")
	flag.Parse()
	if err := run(*runs, *gbs, *profilesDir); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(runs, gbs int, dir string) error {
	net, err := profiles.LoadNetwork(dir)
	if err != nil {
		return err
	}
	fmt.Printf("machine: %s, %d cores (GOMAXPROCS %d), %s %s/%s\n", cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0),
		runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Printf("global batch %d, prices USD/GPU-h: A100-40 %.2f, V100-16 %.2f, GH200-96 %.2f; A100 and V100 4 per machine, GH200 1\n\n",
		gbs, priceA100, priceV100, priceGH)
	fmt.Println("| scenario | model | objective | search (median) | Sailor | speed-up | best plan | iters/s | USD/iter | scored |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, sc := range scenarios() {
		m, err := profiles.Load(sc.model, dir)
		if err != nil {
			return err
		}
		for _, obj := range []planner.Objective{planner.MaxThroughput, planner.MinCost} {
			var times []time.Duration
			var res *planner.Result
			for i := 0; i < runs; i++ {
				start := time.Now()
				res, err = planner.Search(planner.Request{Model: m, Network: net, Pools: sc.pools, GlobalBatch: gbs, Objective: obj})
				if err != nil {
					return fmt.Errorf("%s, %s: %w", sc.name, obj, err)
				}
				times = append(times, time.Since(start))
			}
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			med := times[len(times)/2].Seconds()
			sailor := fmt.Sprintf("%.1f s", sc.sailor)
			speedup := fmt.Sprintf("%.0f×", sc.sailor/med)
			if sc.upTo {
				sailor = "< " + sailor
				speedup = "≤ " + speedup
			}
			e := res.Best.Estimate
			fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %.4g | %.4g | %d |\n", sc.name, sc.model, obj, fmtDur(med), sailor, speedup,
				brief(&res.Best.Plan), e.Throughput, e.USDPerIteration, res.Evaluated)
		}
	}
	return nil
}

// brief is P, D, micro-batch and, per stage, GPU type, TP and layers.
func brief(p *planner.Plan) string {
	parts := make([]string, len(p.Stages))
	for i, st := range p.Stages {
		r := st.Replicas[0]
		parts[i] = fmt.Sprintf("%s TP%d L%d-%d", r.GPU, r.TP, st.FirstLayer, st.LastLayer)
		if zoneSpread(p) {
			parts[i] += " " + r.Zone
		}
	}
	return fmt.Sprintf("P=%d D=%d mbs=%d: %s", len(p.Stages), p.DP(), p.MicroBatch, strings.Join(parts, ", "))
}

func zoneSpread(p *planner.Plan) bool {
	z := p.Stages[0].Replicas[0].Zone
	for _, st := range p.Stages {
		for _, r := range st.Replicas {
			if r.Zone != z {
				return true
			}
		}
	}
	return false
}

func fmtDur(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.0f ms", s*1e3)
	}
	return fmt.Sprintf("%.2f s", s)
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}
