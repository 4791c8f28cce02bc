package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/schooner-ml/schooner/serving/router"
)

// modelID is the fake deployment's model.
const modelID = "routerq/fake"

// queues are the router's queue constructors by name, as `schooner serve router --queue`
// picks them: nil is the router's default, the heap.
var queues = map[string]func() router.Queue{
	"heap": nil,
	"pq":   router.NewPQueue,
}

// queueNames is the order the table lists them in: the baseline first.
var queueNames = []string{"heap", "pq"}

// setup is what every trial of a run shares.
type setup struct {
	Slots      int           // the worker's batch slots
	Step       time.Duration // the worker's time per decode step (one token of every slot)
	MaxTokens  int           // tokens per request
	MaxQueue   int           // the router's queue bound (429 over it)
	MaxRunning int           // the router's bound on requests at the worker
	Clients    int
	Timeout    time.Duration // per request
}

// trial is one run of one queue over one schedule.
type trial struct {
	Queue   string
	Repeat  int
	Results []result
	// Queued is what OnDispatch said per completion id: one wait per submit.
	Queued      map[string][]time.Duration
	PeakWaiting int // the most requests seen waiting (sampled every 5 ms)
	Overloads   int // submits the worker refused (none while MaxRunning ≤ slots)
	Counters    router.Counters
	Wall        time.Duration
}

// observer collects OnDispatch's reports; it runs on the router's dispatch loop.
type observer struct {
	mu     sync.Mutex
	queued map[string][]time.Duration
}

func (o *observer) observe(id string, queued time.Duration) {
	o.mu.Lock()
	o.queued[id] = append(o.queued[id], queued)
	o.mu.Unlock()
}

func (o *observer) take() map[string][]time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.queued
	o.queued = map[string][]time.Duration{}
	return m
}

// runTrial starts a fake worker, a router pool over it as `schooner serve router` builds one
// (one replica, the named queue, plus MaxRunning and the OnDispatch hook) and its HTTP server,
// warms them up, sends sched through HTTP and tears everything down.
func runTrial(s setup, queue string, repeat int, sched []time.Duration) (trial, error) {
	t := trial{Queue: queue, Repeat: repeat}
	w, err := startWorker(s.Slots, s.Step)
	if err != nil {
		return t, fmt.Errorf("starting the worker: %w", err)
	}
	defer w.close()
	obs := &observer{queued: map[string][]time.Duration{}}
	pool, err := router.NewPool(router.Options{Model: modelID, Deployment: "routerq", MaxQueue: s.MaxQueue,
		MaxRunning: s.MaxRunning, NewQueue: queues[queue], OnDispatch: obs.observe})
	if err != nil {
		return t, err
	}
	defer pool.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return t, fmt.Errorf("listening: %w", err)
	}
	srv := &http.Server{Handler: pool, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	pool.SetReplicas([]router.ReplicaRoute{{Replica: 0, Stages: []router.StageAddr{{Addr: w.addr()}}}})
	if err := waitReady(pool, 10*time.Second); err != nil {
		return t, err
	}
	url := "http://" + ln.Addr().String() + "/v1/completions"

	// Warm-up, not recorded: connections, the router's and the queue's first allocations.
	warm := make([]time.Duration, 2*s.Slots)
	for i := range warm {
		warm[i] = time.Duration(i) * 5 * time.Millisecond
	}
	for _, r := range drive(url, modelID, warm, min(s.Clients, len(warm)), s.MaxTokens, s.Timeout) {
		if r.Err != "" {
			return t, fmt.Errorf("warm-up request %d: %s", r.Index, r.Err)
		}
	}
	obs.take()
	before := pool.Status().Counters

	stop := make(chan struct{})
	peak := make(chan int)
	go func() { peak <- samplePeak(pool, stop) }()
	start := time.Now()
	t.Results = drive(url, modelID, sched, s.Clients, s.MaxTokens, s.Timeout)
	t.Wall = time.Since(start)
	close(stop)
	t.PeakWaiting = <-peak
	t.Queued = obs.take()
	t.Overloads = w.overloaded()
	after := pool.Status().Counters
	t.Counters = router.Counters{Completed: after.Completed - before.Completed, Failed: after.Failed - before.Failed,
		Cancelled: after.Cancelled - before.Cancelled, Pauses: after.Pauses - before.Pauses, Resumes: after.Resumes - before.Resumes}
	return t, nil
}

// waitReady polls until the router is connected to its stage.
func waitReady(pool *router.Pool, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for !pool.Status().Ready {
		if time.Now().After(deadline) {
			return errors.New("the router did not connect to the fake worker")
		}
		time.Sleep(2 * time.Millisecond)
	}
	return nil
}

// samplePeak is the most requests seen waiting in the router's queue until stop closes.
func samplePeak(pool *router.Pool, stop chan struct{}) int {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	peak := 0
	for {
		select {
		case <-stop:
			return peak
		case <-tick.C:
			peak = max(peak, pool.Status().Waiting)
		}
	}
}
