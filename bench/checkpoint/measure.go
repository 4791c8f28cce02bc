package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/schooner-ml/schooner/checkpoint"
)

// throughput is one row of (a).
type throughput struct {
	Bytes         int64   `json:"bytes"`
	RawSeconds    float64 `json:"raw_seconds"` // one stream
	RawMBps       float64 `json:"raw_mb_per_s"`
	ParSeconds    float64 `json:"raw_parallel_seconds"` // as many streams as engine writers
	ParMBps       float64 `json:"raw_parallel_mb_per_s"`
	EngineSeconds float64 `json:"engine_seconds"`
	EngineMBps    float64 `json:"engine_mb_per_s"`
	Ratio         float64 `json:"ratio"`          // engine / the better raw
	FirstSeconds  float64 `json:"warmup_seconds"` // mean of the warm-up checkpoints (fresh slots, cold staging)
}

// blocked is one row of (b).
type blocked struct {
	Bytes          int64   `json:"bytes"`
	StagingBytes   int64   `json:"staging_bytes"`
	SyncSeconds    float64 `json:"sync_seconds"`
	BlockedSeconds float64 `json:"blocked_seconds"`
	Ratio          float64 `json:"ratio"` // sync / blocked
}

// plan is the single-rank plan every benchmark checkpoint is saved under.
var plan = checkpoint.PlanInfo{World: 1, PP: 1, DP: 1, TP: 1}

// step numbers every checkpoint of the run uniquely.
var step int64

// makeState maps size bytes of pseudo-random state and views it as 16 tensors.
func makeState(size int64) ([]byte, checkpoint.Shard, error) {
	b, err := allocState(size)
	if err != nil {
		return nil, checkpoint.Shard{}, err
	}
	fill(b)
	const parts = 16
	var shard checkpoint.Shard
	per := size / parts
	for i := int64(0); i < parts; i++ {
		end := (i + 1) * per
		if i == parts-1 {
			end = size
		}
		shard.Tensors = append(shard.Tensors, checkpoint.Tensor{Name: fmt.Sprintf("layers.%d.w", i), Layer: int(i),
			DType: checkpoint.Uint8, Shape: []int64{end - i*per}, Data: b[i*per : end : end]})
	}
	return b, shard, nil
}

// fill writes incompressible bytes: one random MiB, repeated with a varying word.
func fill(b []byte) {
	const block = 1 << 20
	x := uint64(0x9e3779b97f4a7c15)
	n := min(len(b), block)
	for i := 0; i+8 <= n; i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(b[i:], x)
	}
	for off := n; off < len(b); off += block {
		m := copy(b[off:], b[:block])
		if m >= 8 {
			binary.LittleEndian.PutUint64(b[off:], uint64(off))
		}
	}
}

// engineOptions is the engine configuration under test.
func engineOptions(c config, dir string, staging int64) checkpoint.Options {
	return checkpoint.Options{Dir: dir, MaxInFlight: c.inflight, Writers: c.writers, ChunkSize: c.chunk,
		StagingBytes: staging, DirectIO: c.direct, Logger: c.log}
}

// saveOnce saves shard and waits; it returns how long Save blocked and the time to commit.
func saveOnce(e *checkpoint.Engine, shard checkpoint.Shard) (blockedFor, total time.Duration, err error) {
	ctx := context.Background()
	step++
	start := time.Now()
	p, err := e.Save(ctx, checkpoint.SaveRequest{Step: step, Shard: shard, Plan: plan})
	if err != nil {
		return 0, 0, err
	}
	blockedFor = time.Since(start)
	if _, err := p.Wait(ctx); err != nil {
		return 0, 0, err
	}
	return blockedFor, time.Since(start), nil
}

// measureSizes runs (a) and (b) for every size. Raw and engine measurements alternate rep by
// rep, so load from other processes on a shared machine falls on both alike.
func measureSizes(c config, dir string) ([]throughput, []blocked, error) {
	block, err := allocState(64 << 20)
	if err != nil {
		return nil, nil, err
	}
	defer freeState(block)
	fill(block)
	rawDir := dir + "-raw"
	if err := os.MkdirAll(rawDir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("creating %s: %w", rawDir, err)
	}
	var tps []throughput
	var bls []blocked
	for _, size := range c.sizes {
		state, shard, err := makeState(size)
		if err != nil {
			return nil, nil, err
		}
		tp, bl, err := measureSize(c, dir, filepath.Join(rawDir, "raw.bin"), block, shard)
		if err != nil {
			return nil, nil, err
		}
		tps, bls = append(tps, tp), append(bls, bl)
		if c.bigStaging && size > c.staging {
			e, err := warmEngine(c, dir, shard, size, 1)
			if err != nil {
				return nil, nil, err
			}
			var blocks []time.Duration
			for i := 0; i < c.reps; i++ {
				b, _, err := saveOnce(e, shard)
				if err != nil {
					e.Close()
					return nil, nil, err
				}
				blocks = append(blocks, b)
			}
			if err := e.Close(); err != nil {
				return nil, nil, err
			}
			big := blocked{Bytes: size, StagingBytes: size, SyncSeconds: bl.SyncSeconds, BlockedSeconds: median(blocks).Seconds()}
			big.Ratio = big.SyncSeconds / big.BlockedSeconds
			bls = append(bls, big)
		}
		freeState(state)
	}
	return tps, bls, nil
}

// measureSize measures one size: c.reps rounds of raw one-stream, raw parallel and engine.
func measureSize(c config, dir, rawPath string, block []byte, shard checkpoint.Shard) (throughput, blocked, error) {
	size := shard.Size()
	tp := throughput{Bytes: size}
	start := time.Now()
	e, err := warmEngine(c, dir, shard, c.staging, c.inflight+2)
	if err != nil {
		return tp, blocked{}, err
	}
	defer e.Close()
	tp.FirstSeconds = time.Since(start).Seconds() / float64(c.inflight+2)
	if _, err := rawWrite(rawPath, block, size, 1); err != nil { // allocate, untimed
		return tp, blocked{}, err
	}
	defer os.Remove(rawPath)
	var raws, pars, blocks, totals []time.Duration
	for i := 0; i < c.reps; i++ {
		b, d, err := saveOnce(e, shard)
		if err != nil {
			return tp, blocked{}, err
		}
		r, err := rawWrite(rawPath, block, size, 1)
		if err != nil {
			return tp, blocked{}, err
		}
		p, err := rawWrite(rawPath, block, size, c.writers)
		if err != nil {
			return tp, blocked{}, err
		}
		raws, pars, blocks, totals = append(raws, r), append(pars, p), append(blocks, b), append(totals, d)
	}
	mb := func(d time.Duration) float64 { return float64(size) / 1e6 / d.Seconds() }
	tp.RawSeconds, tp.RawMBps = median(raws).Seconds(), mb(median(raws))
	tp.ParSeconds, tp.ParMBps = median(pars).Seconds(), mb(median(pars))
	tp.EngineSeconds, tp.EngineMBps = median(totals).Seconds(), mb(median(totals))
	tp.Ratio = tp.EngineMBps / max(tp.RawMBps, tp.ParMBps)
	bl := blocked{Bytes: size, StagingBytes: c.staging, SyncSeconds: tp.RawSeconds, BlockedSeconds: median(blocks).Seconds()}
	bl.Ratio = bl.SyncSeconds / bl.BlockedSeconds
	return tp, bl, nil
}

// warmEngine opens the engine and saves warmups checkpoints: the first ones allocate slot
// extents and fault in the staging pool, which a long-running trainer pays once.
func warmEngine(c config, dir string, shard checkpoint.Shard, staging int64, warmups int) (*checkpoint.Engine, error) {
	e, err := checkpoint.Open(engineOptions(c, dir, staging))
	if err != nil {
		return nil, err
	}
	for i := 0; i < warmups; i++ {
		if _, _, err := saveOnce(e, shard); err != nil {
			e.Close()
			return nil, err
		}
	}
	return e, nil
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func printThroughput(rows []throughput) {
	lines := make([]string, len(rows))
	for i, r := range rows {
		lines[i] = fmt.Sprintf("| %s | %.2f s, %.0f MB/s | %.2f s, %.0f MB/s | %.2f s, %.0f MB/s | %.2f | %.2f s |", human(r.Bytes),
			r.RawSeconds, r.RawMBps, r.ParSeconds, r.ParMBps, r.EngineSeconds, r.EngineMBps, r.Ratio, r.FirstSeconds)
	}
	printTable("(a) persistence throughput, Save to durable commit, against raw O_DIRECT 64 MiB writes + fsync over an allocated file",
		[]string{"checkpoint", "raw, 1 stream", "raw, parallel streams", "engine Save → commit", "ratio to the better raw (goal ≥ 0.90)",
			"warm-up checkpoints (fresh slots, cold staging), mean"}, lines)
}

func printBlocked(rows []blocked) {
	lines := make([]string, len(rows))
	for i, r := range rows {
		lines[i] = fmt.Sprintf("| %s | %s | %.2f s | %.3f s | %.1f× |", human(r.Bytes), human(r.StagingBytes), r.SyncSeconds, r.BlockedSeconds, r.Ratio)
	}
	printTable("(b) time the caller is blocked per checkpoint, against a synchronous write + fsync of the same bytes",
		[]string{"checkpoint", "staging pool", "synchronous write + fsync", "engine: Save returns after", "less blocking"}, lines)
}

// printTable prints a Markdown table under title and a blank line: columns is its header, and
// each of lines one row, already formatted ("| a | b |").
func printTable(title string, columns, lines []string) {
	fmt.Println(title)
	fmt.Println()
	fmt.Println("| " + strings.Join(columns, " | ") + " |")
	fmt.Println("|" + strings.Repeat("---|", len(columns)))
	for _, l := range lines {
		fmt.Println(l)
	}
	fmt.Println()
}
