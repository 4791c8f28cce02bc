// Command emergency measures the time from a preemption notice to a checkpoint durable in the
// remote tier, the number that decides whether a spot job loses work: AWS gives 2 minutes of
// notice, GCP 30 seconds. A rank saves a shard of -size bytes every -every iterations of
// -step simulated compute through a real checkpoint agent (local and remote tier, a real
// S3-compatible server: versitygw on this machine); mid-interval the agent gets a notice; the
// trainer sees it at its next poll, saves an emergency shard and waits until it is durable in
// the store. The baseline in the same run is a plain multipart upload of the same bytes to the
// same server, so the ratio says what the agent's path costs over the network alone.
//
//	go run ./bench/emergency -size 1GiB -size 4GiB -out bench/emergency/data/run.json
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/agent"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/checkpoint/store/s3test"
)

// Result is one size's measurement.
type Result struct {
	Bytes int64 `json:"bytes"`
	// NoticeToPoll is how long the trainer took to see the notice (at most one iteration);
	// Stall how long the emergency save blocked it; NoticeToDurable the whole path.
	NoticeToPoll    float64 `json:"notice_to_poll_s"`
	Stall           float64 `json:"save_stall_s"`
	NoticeToDurable float64 `json:"notice_to_durable_s"`
	// RawUpload is the baseline: the same bytes put to the same store by one multipart upload.
	RawUpload float64 `json:"raw_upload_s"`
	Ratio     float64 `json:"durable_over_raw"`
	// FitsAWS and FitsGCP: durable before a 120 s and a 30 s notice ran out.
	FitsAWS bool `json:"fits_aws_120s"`
	FitsGCP bool `json:"fits_gcp_30s"`
}

type sizes []int64

func (s *sizes) String() string { return fmt.Sprint(*s) }
func (s *sizes) Set(v string) error {
	n, err := store.ParseSize(v)
	if err == nil && n == 0 {
		err = fmt.Errorf("size %q: a shard of no bytes measures nothing", v)
	}
	if err == nil {
		*s = append(*s, n)
	}
	return err
}

func main() {
	var sz sizes
	every := flag.Int("every", 10, "checkpoint every N iterations")
	step := flag.Duration("step", 200*time.Millisecond, "simulated compute per iteration")
	out := flag.String("out", "", "write the results as JSON here")
	work := flag.String("dir", "", "scratch directory (default a temporary one)")
	flag.Var(&sz, "size", "shard size (repeat; default 256MiB and 1GiB)")
	repeats := flag.Int("repeats", 3, "runs per size; the median is reported, every run kept in -out")
	flag.Parse()
	if len(sz) == 0 {
		sz = sizes{256 << 20, 1 << 30}
	}
	if err := run(sz, *every, *repeats, *step, *out, *work); err != nil {
		fmt.Fprintln(os.Stderr, "emergency:", err)
		os.Exit(1)
	}
}

func run(sz sizes, every, repeats int, step time.Duration, out, work string) error {
	if work == "" {
		d, err := os.MkdirTemp("", "schooner-emergency-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		work = d
	}
	if err := os.MkdirAll(filepath.Join(work, "s3"), 0o755); err != nil {
		return err
	}
	gw, stop, err := s3test.Launch(filepath.Join(work, "s3"))
	if err != nil {
		return err
	}
	defer stop()
	host, _ := os.Hostname()
	machine := fmt.Sprintf("%s, %d CPUs, %s/%s, %s; store: versitygw %s on loopback, part size %d MiB",
		host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), s3test.Version, store.DefaultPartSize>>20)
	fmt.Println("machine:", machine)
	var results, runs []Result
	for i, n := range sz {
		var rs []Result
		for k := range max(repeats, 1) {
			r, err := measure(gw, fmt.Sprint(i, "-", k), filepath.Join(work, fmt.Sprint(i, "-", k)), n, every, step)
			if err != nil {
				return fmt.Errorf("%d bytes: %w", n, err)
			}
			rs = append(rs, r)
		}
		r := median(rs)
		fmt.Printf("%6d MiB: notice→durable %.2f s (poll %.2f s, save stall %.2f s); raw upload %.2f s; ratio %.2f; AWS 120 s %v, GCP 30 s %v (median of %d)\n",
			n>>20, r.NoticeToDurable, r.NoticeToPoll, r.Stall, r.RawUpload, r.Ratio, r.FitsAWS, r.FitsGCP, len(rs))
		results = append(results, r)
		runs = append(runs, rs...)
	}
	if out == "" {
		return nil
	}
	b, err := json.MarshalIndent(map[string]any{"machine": machine, "every": every, "step_s": step.Seconds(), "results": results, "runs": runs}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

func newStore(gw *s3test.Gateway, prefix string) (*store.S3, error) {
	return store.NewS3(context.Background(), store.S3Options{
		Bucket: gw.Bucket, Prefix: prefix, Endpoint: gw.Endpoint, Region: "us-east-1",
		AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey,
	})
}

// measure runs one size once; run names its objects apart from every other run's (a put of
// the same key, size and checksum would resume, not upload).
func measure(gw *s3test.Gateway, run, dir string, n int64, every int, step time.Duration) (Result, error) {
	ctx := context.Background()
	res := Result{Bytes: n}
	data := make([]byte, n)
	rng := rand.New(rand.NewPCG(uint64(n), 1))
	for i := 0; i+8 <= len(data); i += 8 {
		binary.LittleEndian.PutUint64(data[i:], rng.Uint64())
	}

	raw, err := newStore(gw, "raw-"+run+"/")
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	if err := raw.Put(ctx, "blob", bytes.NewReader(data), n, crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))); err != nil {
		return res, fmt.Errorf("raw upload: %w", err)
	}
	res.RawUpload = time.Since(t0).Seconds()

	st, err := newStore(gw, "job-"+run+"/")
	if err != nil {
		return res, err
	}
	shm := filepath.Join(dir, "shm")
	if err := os.MkdirAll(shm, 0o755); err != nil {
		return res, err
	}
	a, err := agent.New(agent.Options{Dir: filepath.Join(dir, "local"), ShmDir: shm, Store: st, Logger: zerolog.Nop()})
	if err != nil {
		return res, err
	}
	sock := filepath.Join(dir, "a.sock")
	l, err := agent.Listen(sock)
	if err != nil {
		return res, err
	}
	served := make(chan error, 1)
	go func() { served <- a.Serve(l) }()
	defer func() { _ = a.Close(); <-served }()

	c, err := agent.Dial(ctx, sock)
	if err != nil {
		return res, err
	}
	defer c.Close()
	plan := checkpoint.PlanInfo{World: 1, PP: 1, DP: 1, TP: 1}
	if _, err := c.Hello(ctx, 0, plan); err != nil {
		return res, err
	}
	if _, err := c.Reserve(ctx, n+(1<<20)); err != nil {
		return res, err
	}
	shard := checkpoint.Shard{Tensors: []checkpoint.Tensor{{Name: "weights", Layer: 0, DType: checkpoint.Uint8, Shape: []int64{n}, Data: data}}}
	// The notice arrives halfway through an iteration mid-interval, as a cloud's does: at any
	// moment, not at the trainer's convenience.
	noticed := make(chan time.Time, 1)
	var noticeAt time.Time
	for it := int64(1); ; it++ {
		if it == int64(every)+int64(every)/2 {
			time.AfterFunc(step/2, func() {
				now := time.Now()
				a.Notice(now.Add(2 * time.Minute))
				noticed <- now
			})
		}
		time.Sleep(step) // the iteration's compute
		select {
		case noticeAt = <-noticed:
		default:
		}
		p, err := c.Poll(ctx)
		if err != nil {
			return res, err
		}
		if p.CheckpointNow {
			res.NoticeToPoll = time.Since(noticeAt).Seconds()
			s0 := time.Now()
			if _, err := c.Save(ctx, it, shard, nil, true); err != nil {
				return res, err
			}
			res.Stall = time.Since(s0).Seconds()
			if _, err := c.Wait(ctx, it, agent.DurableRemote); err != nil {
				return res, err
			}
			res.NoticeToDurable = time.Since(noticeAt).Seconds()
			break
		}
		if it%int64(every) == 0 {
			if _, err := c.Save(ctx, it, shard, nil, false); err != nil {
				return res, err
			}
		}
	}
	res.Ratio = res.NoticeToDurable / res.RawUpload
	res.FitsAWS, res.FitsGCP = res.NoticeToDurable < 120, res.NoticeToDurable < 30
	return res, nil
}

// median is the run with the median notice-to-durable time, its ratio against the median raw
// upload of the same runs.
func median(rs []Result) Result {
	by := slices.Clone(rs)
	slices.SortFunc(by, func(a, b Result) int { return cmp.Compare(a.NoticeToDurable, b.NoticeToDurable) })
	m := by[len(by)/2]
	raws := make([]float64, len(rs))
	for i, r := range rs {
		raws[i] = r.RawUpload
	}
	slices.Sort(raws)
	m.RawUpload = raws[len(raws)/2]
	m.Ratio = m.NoticeToDurable / m.RawUpload
	return m
}
