package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/schooner-ml/schooner/checkpoint"
)

// loopMode is one way of checkpointing inside the loop.
type loopMode struct {
	Every      int  `json:"every"`      // iterations between checkpoints
	Overlapped bool `json:"overlapped"` // Save runs during the next iteration's compute
}

// loopResult is one measured mode.
type loopResult struct {
	loopMode
	Seconds        float64 `json:"seconds"`
	OverheadPct    float64 `json:"overhead_pct"`
	BlockedSeconds float64 `json:"mean_blocked_seconds"` // per checkpoint, what the loop waited
}

// loop is one state size of (c).
type loop struct {
	Bytes       int64        `json:"bytes"`
	IterMS      int          `json:"iter_ms"`
	Iters       int          `json:"iters"`
	NoneSeconds float64      `json:"none_seconds"`
	Modes       []loopResult `json:"modes"`
}

// loopModes are measured in this order, each against the same no-checkpoint loop.
var loopModes = []loopMode{{10, false}, {10, true}, {1, false}, {1, true}}

// measureLoops runs the simulated training loop for every loop size.
func measureLoops(c config, dir string) ([]loop, error) {
	var rows []loop
	for _, size := range c.loopSizes {
		state, shard, err := makeState(size)
		if err != nil {
			return nil, err
		}
		row, err := measureLoop(c, dir, state, shard)
		freeState(state)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func measureLoop(c config, dir string, state []byte, shard checkpoint.Shard) (loop, error) {
	e, err := checkpoint.Open(engineOptions(c, dir, c.staging))
	if err != nil {
		return loop{}, err
	}
	defer e.Close()
	for i := 0; i < c.inflight+2; i++ { // every slot written once, staging faulted in
		if _, _, err := saveOnce(e, shard); err != nil {
			return loop{}, err
		}
	}
	row := loop{Bytes: int64(len(state)), IterMS: c.iterMS, Iters: c.iters}
	none, _, err := trainLoop(c, e, state, shard, loopMode{})
	if err != nil {
		return loop{}, err
	}
	row.NoneSeconds = none.Seconds()
	for _, m := range loopModes {
		d, b, err := trainLoop(c, e, state, shard, m)
		if err != nil {
			return loop{}, err
		}
		row.Modes = append(row.Modes, loopResult{loopMode: m, Seconds: d.Seconds(),
			OverheadPct: 100 * (d.Seconds() - row.NoneSeconds) / row.NoneSeconds, BlockedSeconds: b.Seconds()})
	}
	return row, nil
}

// trainLoop runs c.iters iterations of compute (a sleep standing in for the GPU's forward and
// backward pass) followed by the optimizer step, which changes the state. Every m.Every
// iterations (0: never) it checkpoints right after the optimizer step:
//
//   - inline: Save is called there and the loop continues once it returns;
//   - overlapped (PCcheck's schedule): Save runs beside the next iteration's compute, and only
//     the next optimizer step waits for it to return, since the weights must not change under
//     the copy.
//
// The time is that of the loop; checkpoints still persisting at its end are waited for outside.
func trainLoop(c config, e *checkpoint.Engine, state []byte, shard checkpoint.Shard, m loopMode) (elapsed, meanBlocked time.Duration, err error) {
	ctx := context.Background()
	var (
		mu      sync.Mutex
		pending []*checkpoint.Pending
		saveErr error
		staging chan struct{} // closed when the overlapped Save returned
		waited  time.Duration
		saves   int
	)
	save := func(s int64) {
		p, err := e.Save(ctx, checkpoint.SaveRequest{Step: s, Shard: shard, Plan: plan})
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			saveErr = err
			return
		}
		pending = append(pending, p)
	}
	iter := time.Duration(c.iterMS) * time.Millisecond
	start := time.Now()
	for i := 1; i <= c.iters; i++ {
		time.Sleep(iter) // forward and backward on the GPU
		if staging != nil {
			t := time.Now()
			<-staging
			waited += time.Since(t)
			staging = nil
		}
		touch(state, i) // optimizer step
		if m.Every == 0 || i%m.Every != 0 {
			continue
		}
		step++
		saves++
		if !m.Overlapped {
			t := time.Now()
			save(step)
			waited += time.Since(t)
			continue
		}
		staging = make(chan struct{})
		go func(s int64, done chan struct{}) {
			save(s)
			close(done)
		}(step, staging)
	}
	elapsed = time.Since(start)
	if staging != nil {
		<-staging
	}
	for _, p := range pending {
		if _, err := p.Wait(ctx); err != nil {
			return 0, 0, err
		}
	}
	if saveErr != nil {
		return 0, 0, saveErr
	}
	if saves > 0 {
		meanBlocked = waited / time.Duration(saves)
	}
	return elapsed, meanBlocked, nil
}

// touch stands in for the optimizer step: it changes one byte in every 4 KiB page of the state.
func touch(state []byte, i int) {
	for off := 0; off < len(state); off += 4096 {
		state[off] += byte(i)
	}
}

func printLoops(rows []loop, c config) {
	var lines []string
	for _, r := range rows {
		for _, m := range r.Modes {
			how := "inline"
			if m.Overlapped {
				how = "overlapped with next compute"
			}
			every := "every iteration"
			if m.Every > 1 {
				every = fmt.Sprintf("every %d iterations", m.Every)
			}
			lines = append(lines, fmt.Sprintf("| %s | %s | %s | %.2f s | %.2f s | %.1f%% | %.3f s |", human(r.Bytes), every, how, m.Seconds,
				r.NoneSeconds, m.OverheadPct, m.BlockedSeconds))
		}
	}
	printTable(fmt.Sprintf("(c) simulated training loop: %d iterations of %d ms compute, then an optimizer step touching every page of the state", c.iters, c.iterMS),
		[]string{"state", "checkpoint", "Save", "loop time", "no checkpoints", "overhead (goal ≤ 3% every 10)", "loop waited per checkpoint"}, lines)
}
