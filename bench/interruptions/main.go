// Command interruptions measures how soon a preemption reaches the control plane by each
// path, in one run: the simulator's event log as the PreemptionRelay reads it (a poll every
// 50 ms), and EC2's EventBridge → SQS path read with the real SDK's SQS client from the
// simulator's EC2 face (a long poll, then a DescribeInstances for the job tag). The time is
// from the preemption to the event in the path's cloud.EventSource; what follows (the signal
// to the job) is the same for both.
//
//	go run ./bench/interruptions [-n 50]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/aws"
	"github.com/schooner-ml/schooner/cloud/sim/ec2api"
	"github.com/schooner-ml/schooner/gpu"
)

// relayPoll is the PreemptionRelay's default interval.
const relayPoll = 50 * time.Millisecond

func main() {
	n := flag.Int("n", 50, "preemptions per path")
	flag.Parse()
	if err := run(*n); err != nil {
		fmt.Fprintln(os.Stderr, "bench/interruptions:", err)
		os.Exit(1)
	}
}

func run(n int) error {
	for _, k := range []string{"AWS_PROFILE", "AWS_REGION", "AWS_ENDPOINT_URL"} {
		os.Unsetenv(k)
	}
	os.Setenv("AWS_CONFIG_FILE", os.DevNull)
	os.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	ctx := context.Background()
	fake := cloud.NewFake("aws", cloud.Offering{Provider: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "p3.2xlarge",
		GPUType: gpu.V100, GPUsPerInstance: 1, SpotPrice: 0.9, OnDemandPrice: 3.06, SpotCapacity: -1})
	face := ec2api.New(fake, ec2api.Options{})
	if err := face.Start("127.0.0.1:0"); err != nil {
		return err
	}
	defer face.Close()
	p, err := aws.New(ctx, aws.Options{Regions: []string{"us-east-1"}, Endpoint: face.Addr()})
	if err != nil {
		return err
	}
	q, err := aws.NewEventQueue(ctx, p, face.SQSQueueURL())
	if err != nil {
		return err
	}
	qctx, stop := context.WithCancel(ctx)
	defer stop()
	go q.Run(qctx)
	gce, err := startGCE(qctx)
	if err != nil {
		return err
	}

	var direct, viaSQS, viaGCE []time.Duration
	lastLog := lastSeq(fake)
	for i := 0; i < n; i++ {
		insts, err := p.Create(ctx, cloud.CreateRequest{JobID: "bench", Zone: "us-east-1a", InstanceType: "p3.2xlarge",
			Capacity: cloud.Spot, Count: 2, ClientToken: fmt.Sprintf("bench-%d", i)})
		if err != nil {
			return err
		}
		// The relay's phase against the preemption is arbitrary: start its ticker at a
		// random offset by preempting at a spread of moments within a poll interval.
		time.Sleep(time.Duration(i%10) * relayPoll / 10)
		t0 := time.Now()
		if err := fake.Preempt(insts[0].ID); err != nil {
			return err
		}
		// Both paths wait at once, each from the same moment.
		var d, v time.Duration
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); d = waitRelay(fake, &lastLog, insts[0].ID, t0) }()
		go func() { defer wg.Done(); v = waitQueue(q, insts[0].ID, t0) }()
		wg.Wait()
		direct, viaSQS = append(direct, d), append(viaSQS, v)
		_ = p.Terminate(ctx, cloud.IDs(insts))
		g, err := gce.preemptOne(ctx, i)
		if err != nil {
			return err
		}
		viaGCE = append(viaGCE, g)
	}
	fmt.Printf("preemption → event in the control plane, %d preemptions per path, %s:\n", n, time.Now().UTC().Format("2006-01-02"))
	fmt.Printf("| path | median | p90 | max |\n|---|---|---|---|\n")
	for _, r := range []struct {
		name string
		d    []time.Duration
	}{{"simulator event log, relay poll 50 ms (baseline)", direct}, {"EventBridge → SQS (real SDK, long poll) + DescribeInstances", viaSQS},
		{"GCE zone operations (real SDK), feed poll 50 ms + instances.get", viaGCE}} {
		sort.Slice(r.d, func(i, j int) bool { return r.d[i] < r.d[j] })
		fmt.Printf("| %s | %s | %s | %s |\n", r.name, pct(r.d, 0.5), pct(r.d, 0.9), r.d[len(r.d)-1].Round(time.Millisecond/10))
	}
	return nil
}

func lastSeq(f *cloud.Fake) int64 {
	ev := f.EventsSince(0)
	if len(ev) == 0 {
		return 0
	}
	return ev[len(ev)-1].Seq
}

// waitRelay is the relay's loop: read the log every relayPoll until the preemption shows.
func waitRelay(f *cloud.Fake, after *int64, id string, t0 time.Time) time.Duration {
	phase := time.Duration(time.Now().UnixNano()) % relayPoll
	time.Sleep(relayPoll - phase) // the next tick of a relay that polls on a 50 ms grid
	for {
		for _, e := range f.EventsSince(*after) {
			*after = e.Seq
			if e.Kind == cloud.EventPreempted && e.Instance.ID == id {
				return time.Since(t0)
			}
		}
		time.Sleep(relayPoll)
	}
}

// waitQueue waits until the SQS reader has the preemption.
func waitQueue(q *aws.EventQueue, id string, t0 time.Time) time.Duration {
	for {
		for _, e := range q.EventsSince(0) {
			if e.Kind == cloud.EventPreempted && e.Instance.ID == id && e.Time.After(t0.Add(-time.Second)) {
				return time.Since(t0)
			}
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func pct(d []time.Duration, q float64) string {
	return d[int(q*float64(len(d)-1))].Round(time.Millisecond / 10).String()
}
