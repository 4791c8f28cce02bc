package aws

import (
	"errors"
	"testing"
	"time"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/gpu"
)

func TestCreateSpotAndOnDemand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	spot := e.mustCreate(t, ctx, cloud.CreateRequest{JobID: "job-1", Zone: "us-east-1a", InstanceType: "p3.2xlarge",
		Capacity: cloud.Spot, Count: 2, Tags: map[string]string{"team": "ml"}})
	od := e.mustCreate(t, ctx, cloud.CreateRequest{JobID: "job-1", Zone: "us-west-2a", InstanceType: "p3.2xlarge", Capacity: cloud.OnDemand, Count: 1})
	if len(spot) != 2 || len(od) != 1 {
		t.Fatalf("got %d spot, %d on-demand", len(spot), len(od))
	}
	s := spot[0]
	if s.Provider != "aws" || s.Region != "us-east-1" || s.Zone != "us-east-1a" || s.Capacity != cloud.Spot ||
		s.State != cloud.StateRunning || s.GPUType != gpu.V100 || s.GPUs != 1 || s.JobID != "job-1" ||
		s.Tags["team"] != "ml" || s.Tags["Name"] != "schooner-job-1" || s.LaunchedAt.IsZero() {
		t.Errorf("spot instance %+v", s)
	}
	if o := od[0]; o.Capacity != cloud.OnDemand || o.Region != "us-west-2" || o.PricePerHour != 3.06 {
		t.Errorf("on-demand instance %+v", o)
	}
	// The backend saw the capacity types and the job tag that EC2 carried.
	back, _ := e.fake.Describe(ctx, []string{s.ID, od[0].ID})
	if len(back) != 2 || back[0].Capacity != cloud.Spot || back[1].Capacity != cloud.OnDemand || back[0].JobID != "job-1" {
		t.Errorf("backend %+v", back)
	}
	got, err := e.p.Describe(ctx, []string{od[0].ID, s.ID, "i-unknown"})
	if err != nil || len(got) != 2 || got[0].ID != od[0].ID || got[1].ID != s.ID {
		t.Errorf("describe %+v %v", got, err)
	}
}

func TestOfferingsPriceSpotLive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	offers, err := e.p.Offerings(ctxT(t), cloud.OfferingFilter{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]cloud.Offering{}
	for _, o := range offers {
		got[o.InstanceType+"/"+o.Zone] = o
	}
	if o := got["p3.2xlarge/us-east-1b"]; o.SpotPrice != 0.91 || o.OnDemandPrice != 3.06 || o.SpotCapacity != -1 || o.GPUType != gpu.V100 || o.Region != "us-east-1" {
		t.Errorf("live-priced offering %+v", o)
	}
	if o := got["p3.2xlarge/us-west-2a"]; o.SpotPrice != 0.99 {
		t.Errorf("second region %+v", o)
	}
	// No spot price for p4d anywhere: the catalog's zones and estimate stand in.
	if o := got["p4d.24xlarge/us-east-1c"]; o.GPUsPerInstance != 8 || o.SpotPrice < 13.1 || o.SpotPrice > 13.11 {
		t.Errorf("fallback offering %+v", o)
	}
	if len(offers) != 5 {
		t.Errorf("got %d offerings: %+v", len(offers), offers)
	}
	only, err := e.p.Offerings(ctxT(t), cloud.OfferingFilter{GPUTypes: []gpu.Type{gpu.A100_40}, Zones: []string{"us-east-1a"}})
	if err != nil || len(only) != 1 || only[0].InstanceType != "p4d.24xlarge" {
		t.Errorf("filtered %+v %v", only, err)
	}
	// Spot instances launched after Offerings carry the live price.
	insts, err := e.p.Create(ctxT(t), spotReq("j", "us-east-1b", 1))
	if err != nil || insts[0].PricePerHour != 0.91 {
		t.Errorf("spot price of instance %+v %v", insts, err)
	}
}

func TestCapacityShortage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	key := cloud.OfferingKey{Capacity: cloud.Spot, InstanceType: "p3.2xlarge", Zone: "us-east-1a"}
	e.fake.Capacity[key] = 1

	got, err := e.p.Create(ctx, spotReq("job", "us-east-1a", 3))
	if len(got) != 1 || !errors.Is(err, cloud.ErrInsufficientCapacity) {
		t.Fatalf("partial: %d instances, %v", len(got), err)
	}
	ce, ok := cloud.AsError(err)
	if !ok || ce.Offering == nil || *ce.Offering != key || ce.Code != "InsufficientInstanceCapacity" || ce.Provider != "aws" {
		t.Errorf("partial error %+v", ce)
	}

	// Nothing left: EC2 answers InsufficientInstanceCapacity (HTTP 500), which is not retried.
	calls := e.face.Calls("RunInstances")
	got, err = e.p.Create(ctx, spotReq("job", "us-east-1a", 2))
	if len(got) != 0 || !cloud.IsInsufficientCapacity(err) || !cloud.ShouldTryElsewhere(err) {
		t.Fatalf("empty: %d instances, %v", len(got), err)
	}
	if ce, _ := cloud.AsError(err); ce.Code != "InsufficientInstanceCapacity" || ce.Offering == nil || *ce.Offering != key {
		t.Errorf("empty error %+v", ce)
	}
	if n := e.face.Calls("RunInstances") - calls; n != 1 {
		t.Errorf("capacity error sent %d times, want 1 (no SDK retry)", n)
	}
	// The unavailable-offerings cache takes the error as it is.
	var u cloud.Unavailable
	if !u.Observe(key, err) || !u.IsUnavailable(key) {
		t.Error("capacity error not marked unavailable")
	}
}

func TestQuota(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fake.InjectError("Create", &cloud.Error{Kind: cloud.ErrQuota, Provider: "sim", Message: "vCPU limit of 64 reached"})
	_, err := e.p.Create(ctxT(t), spotReq("job", "us-east-1a", 1))
	ce, ok := cloud.AsError(err)
	if !cloud.IsQuota(err) || !ok || ce.Code != "VcpuLimitExceeded" || ce.Message != "vCPU limit of 64 reached" {
		t.Errorf("quota error %v", err)
	}
	if n := e.face.Calls("RunInstances"); n != 1 {
		t.Errorf("quota error sent %d times, want 1", n)
	}
}

func TestThrottlingIsRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	e.face.ThrottleNext(1)
	insts, err := e.p.Create(ctx, spotReq("job", "us-east-1a", 1))
	if err != nil || len(insts) != 1 {
		t.Fatalf("throttled create: %v", err)
	}
	if n := e.face.Calls("RunInstances"); n != 2 {
		t.Errorf("RunInstances calls %d, want 2", n)
	}
	if live, _ := e.fake.List(ctx, nil); len(live) != 1 {
		t.Errorf("retry launched %d instances", len(live))
	}
	e.face.ThrottleNext(1)
	got, err := e.p.Describe(ctx, []string{insts[0].ID})
	if err != nil || len(got) != 1 {
		t.Fatalf("throttled describe: %v", err)
	}
}

func TestThrottlingSurfacesWhenAttemptsRunOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.RetryMaxAttempts = 2 })
	e.face.ThrottleNext(2)
	_, err := e.p.List(ctxT(t), nil)
	if !cloud.IsThrottled(err) || !cloud.Retryable(err) {
		t.Errorf("got %v, want throttled", err)
	}
	if ce, _ := cloud.AsError(err); ce == nil || ce.Code != "RequestLimitExceeded" {
		t.Errorf("code %+v", ce)
	}
}

func TestListPagesAndFindsLeaksByJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.PageSize = 5 })
	ctx := ctxT(t)
	mine := e.mustCreate(t, ctx, spotReq("job-a", "us-east-1a", 12))
	e.mustCreate(t, ctx, spotReq("job-b", "us-east-1b", 2))
	west := e.mustCreate(t, ctx, cloud.CreateRequest{JobID: "job-a", Zone: "us-west-2a", InstanceType: "p3.2xlarge", Capacity: cloud.OnDemand, Count: 1})
	before := e.face.Calls("DescribeInstances")
	got, err := e.p.List(ctx, map[string]string{cloud.JobTag: "job-a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 13 {
		t.Fatalf("listed %d, want 13", len(got))
	}
	for _, inst := range got {
		if inst.JobID != "job-a" {
			t.Errorf("listed %s of %s", inst.ID, inst.JobID)
		}
	}
	// 12 in us-east-1 at 5 a page is 3 pages; us-west-2 is 1.
	if n := e.face.Calls("DescribeInstances") - before; n != 4 {
		t.Errorf("DescribeInstances calls %d, want 4", n)
	}
	// Describe of more ids than a page also reads every page.
	ids := append(cloud.IDs(mine), west[0].ID)
	if all, err := e.p.Describe(ctx, ids); err != nil || len(all) != 13 {
		t.Errorf("describe %d %v", len(all), err)
	}
	if err := e.p.Terminate(ctx, ids); err != nil {
		t.Fatal(err)
	}
	if left, err := e.p.List(ctx, map[string]string{cloud.JobTag: "job-a"}); err != nil || len(left) != 0 {
		t.Errorf("after cleanup %d left, %v", len(left), err)
	}
	if other, _ := e.p.List(ctx, map[string]string{cloud.JobTag: "job-b"}); len(other) != 2 {
		t.Errorf("job-b has %d", len(other))
	}
}

func TestPreemptionSeenByDescribe(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	insts := e.mustCreate(t, ctx, spotReq("job", "us-east-1a", 2))
	if err := e.fake.Preempt(insts[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := e.p.Terminate(ctx, []string{insts[1].ID}); err != nil {
		t.Fatal(err)
	}
	got, err := e.p.Describe(ctx, cloud.IDs(insts))
	if err != nil || len(got) != 2 {
		t.Fatalf("describe %+v %v", got, err)
	}
	pre, term := got[0], got[1]
	if pre.State != cloud.StatePreempted || pre.Interruption == nil || pre.Interruption.Kind != cloud.Preempted || pre.Interruption.Deadline.IsZero() {
		t.Errorf("preempted %+v", pre)
	}
	if d := time.Since(pre.Interruption.Deadline); d < -time.Second || d > time.Minute {
		t.Errorf("preempted at %v", pre.Interruption.Deadline)
	}
	if term.State != cloud.StateTerminated || term.Interruption != nil {
		t.Errorf("terminated %+v", term)
	}
	v, _, err := cloud.ConfirmLost(ctx, e.p, insts[0].ID)
	if err != nil || v != cloud.VerdictPreempted {
		t.Errorf("verdict %v %v", v, err)
	}
	if live, _ := e.p.List(ctx, nil); len(live) != 0 {
		t.Errorf("gone instances listed: %+v", live)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	cases := []struct {
		name string
		req  cloud.CreateRequest
		code string
		call bool // reaches EC2
	}{
		{"count 0", cloud.CreateRequest{Zone: "us-east-1a", InstanceType: "p3.2xlarge", Capacity: cloud.Spot}, "InvalidParameterValue", false},
		{"no capacity type", cloud.CreateRequest{Zone: "us-east-1a", InstanceType: "p3.2xlarge", Count: 1}, "InvalidParameterValue", false},
		{"region not configured", spotReq("j", "eu-west-1a", 1), "", false},
		{"unknown type", cloud.CreateRequest{Zone: "us-east-1a", InstanceType: "p9.huge", Capacity: cloud.Spot, Count: 1}, "InvalidParameterValue", true},
		{"unknown zone", spotReq("j", "us-east-1z", 1), "InvalidParameterValue", true},
		{"type not in zone", spotReq("j", "us-west-2b", 1), "InvalidParameterValue", true},
	}
	for _, tc := range cases {
		before := e.face.Calls("RunInstances")
		got, err := e.p.Create(ctx, tc.req)
		ce, ok := cloud.AsError(err)
		if len(got) != 0 || !cloud.IsInvalidRequest(err) || !ok || ce.Code != tc.code || ce.Message == "" {
			t.Errorf("%s: %d instances, %v", tc.name, len(got), err)
		}
		if called := e.face.Calls("RunInstances") > before; called != tc.call {
			t.Errorf("%s: reached EC2 %v, want %v", tc.name, called, tc.call)
		}
	}
	// A type EC2 knows but does not sell in a zone it knows: Unsupported.
	e.fake.OfferingList = append(e.fake.OfferingList, cloud.Offering{Provider: "aws", Region: "us-east-1", Zone: "us-east-1c", InstanceType: "g5.xlarge", SpotPrice: 0.5, OnDemandPrice: 1})
	_, err := e.p.Create(ctx, spotReq("j", "us-east-1c", 1))
	if ce, _ := cloud.AsError(err); !cloud.IsInvalidRequest(err) || ce.Code != "Unsupported" || ce.Offering == nil {
		t.Errorf("unsupported: %v", err)
	}
}

func TestTerminateIgnoresUnknownIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	insts := e.mustCreate(t, ctx, spotReq("job", "us-east-1a", 1))
	if err := e.p.Terminate(ctx, []string{"i-0123456789abcdef0", insts[0].ID, insts[0].ID}); err != nil {
		t.Fatal(err)
	}
	if err := e.p.Terminate(ctx, []string{insts[0].ID}); err != nil {
		t.Errorf("terminating twice: %v", err)
	}
	// A provider that never saw the id (a restarted worker) finds it by asking every region.
	fresh := NewFromClients(Options{Catalog: testCatalog()}, e.p.clients)
	got, err := fresh.Describe(ctx, []string{insts[0].ID})
	if err != nil || len(got) != 1 || got[0].State != cloud.StateTerminated {
		t.Errorf("fresh describe %+v %v", got, err)
	}
}

func TestClientTokenMakesCreateIdempotent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	req := spotReq("job", "us-east-1a", 2)
	req.ClientToken = "job-attempt-1"
	first := e.mustCreate(t, ctx, req)
	again := e.mustCreate(t, ctx, req)
	if len(again) != 2 || again[0].ID != first[0].ID || again[1].ID != first[1].ID {
		t.Errorf("first %v, again %v", cloud.IDs(first), cloud.IDs(again))
	}
	if live, _ := e.fake.List(ctx, nil); len(live) != 2 {
		t.Errorf("%d instances launched", len(live))
	}
	req.Count = 3
	if _, err := e.p.Create(ctx, req); !cloud.IsInvalidRequest(err) {
		t.Errorf("token reused with other parameters: %v", err)
	}
}
