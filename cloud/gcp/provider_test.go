package gcp

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/catalog"
	"github.com/schooner-ml/schooner/cloud/sim/gceapi"
	"github.com/schooner-ml/schooner/cloud/sim/gceapi/gcetest"
	"github.com/schooner-ml/schooner/gpu"
)

// testCatalog is a catalog of its own, so the tests do not depend on the price data.
func testCatalog() *catalog.Catalog {
	zones := []string{gcetest.ZoneA, gcetest.ZoneB, "europe-west4-a"}
	return &catalog.Catalog{Types: []catalog.InstanceType{
		{Provider: "gcp", Name: gcetest.A2, GPUType: gpu.A100_40, GPUs: 1, VCPUs: 12, MemoryGiB: 85, MachineType: gcetest.A2,
			OnDemand: map[string]float64{"us-central1": 3.67, "europe-west4": 3.9}, SpotDiscount: 0.6, Zones: zones},
		{Provider: "gcp", Name: gcetest.N1V100, GPUType: gpu.V100, GPUs: 1, VCPUs: 8, MemoryGiB: 30, MachineType: "n1-standard-8",
			AcceleratorType: "nvidia-tesla-v100", AcceleratorCount: 1,
			OnDemand: map[string]float64{"us-central1": 2.86}, SpotDiscount: 0.7, Zones: zones[:2]},
		{Provider: "aws", Name: "p3.2xlarge", GPUType: gpu.V100, GPUs: 1, OnDemand: map[string]float64{"us-east-1": 3.06},
			Zones: []string{"us-east-1a"}},
	}}
}

// env is a Provider using the real REST clients against the Compute face over a Fake.
type env struct {
	fake *cloud.Fake
	srv  *gceapi.Server
	p    *Provider
	now  time.Time
}

func newEnv(t *testing.T) *env {
	t.Helper()
	cat := testCatalog()
	e := &env{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	var offers []cloud.Offering
	for _, o := range cat.Offerings("gcp") {
		if o.Region == "us-central1" {
			offers = append(offers, o)
		}
	}
	e.fake = cloud.NewFake("gcp", offers...)
	e.fake.Now = func() time.Time { return e.now }
	e.srv = gcetest.Start(t, e.fake)
	p, err := New(context.Background(), Options{
		Project: gcetest.Project, Zones: []string{gcetest.ZoneA, gcetest.ZoneB}, Endpoint: e.srv.URL(), Catalog: cat,
		PageSize: 2, PollInterval: time.Millisecond,
		Retry: Retry{Attempts: 5, Initial: time.Millisecond, Max: 4 * time.Millisecond},
		Now:   func() time.Time { return e.now },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	e.p = p
	return e
}

func (e *env) create(t *testing.T, req cloud.CreateRequest) []cloud.Instance {
	t.Helper()
	got, err := e.p.Create(context.Background(), req)
	if err != nil {
		t.Fatalf("create %+v: %v", req, err)
	}
	return got
}

func ids(insts []cloud.Instance) []string {
	out := cloud.IDs(insts)
	sort.Strings(out)
	return out
}

func TestOfferingsFromCatalog(t *testing.T) {
	e := newEnv(t)
	got, err := e.p.Offerings(context.Background(), cloud.OfferingFilter{GPUTypes: []gpu.Type{gpu.V100}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("want V100 in two zones, got %+v", got)
	}
	for _, o := range got {
		if o.Provider != "gcp" || o.SpotCapacity != -1 || o.SpotPrice <= 0 || o.SpotPrice >= o.OnDemandPrice {
			t.Fatalf("offering %+v", o)
		}
	}
	// Regions pick the catalog's zones when no zones are given.
	p, err := NewWithClients(Options{Project: gcetest.Project, Regions: []string{"europe-west4"}, Catalog: testCatalog()}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if z := p.Zones(); len(z) != 1 || z[0] != "europe-west4-a" {
		t.Fatalf("zones %v", z)
	}
}

func TestCreateSpotAndOnDemand(t *testing.T) {
	e := newEnv(t)
	spot := e.create(t, cloud.CreateRequest{JobID: "Job_42", Zone: gcetest.ZoneA, InstanceType: gcetest.N1V100, Capacity: cloud.Spot, Count: 2,
		Tags: map[string]string{"Team": "ML Infra"}})
	od := e.create(t, cloud.CreateRequest{JobID: "job-42", Zone: gcetest.ZoneB, InstanceType: gcetest.A2, Capacity: cloud.OnDemand, Count: 1})
	if len(spot) != 2 || len(od) != 1 {
		t.Fatalf("got %d spot, %d on-demand", len(spot), len(od))
	}
	for _, inst := range spot {
		if inst.Capacity != cloud.Spot || inst.InstanceType != gcetest.N1V100 || inst.GPUType != gpu.V100 || inst.GPUs != 1 ||
			inst.State != cloud.StateRunning || inst.Zone != gcetest.ZoneA || inst.Region != "us-central1" || inst.JobID != "job_42" ||
			inst.Tags["team"] != "ml_infra" || inst.PricePerHour <= 0 || inst.PricePerHour >= 2.86 || inst.LaunchedAt.IsZero() {
			t.Fatalf("spot instance %+v", inst)
		}
	}
	if o := od[0]; o.Capacity != cloud.OnDemand || o.InstanceType != gcetest.A2 || o.GPUType != gpu.A100_40 || o.PricePerHour != 3.67 {
		t.Fatalf("on-demand instance %+v", o)
	}
	// The backend got the shape, capacity and job that GCE was asked for.
	back, _ := e.fake.Describe(context.Background(), ids(append(spot, od...)))
	if len(back) != 3 {
		t.Fatalf("backend has %+v", back)
	}
	for _, b := range back {
		if b.Zone == gcetest.ZoneA && (b.Capacity != cloud.Spot || b.InstanceType != gcetest.N1V100 || b.JobID != "job_42") {
			t.Fatalf("backend spot %+v", b)
		}
		if b.Zone == gcetest.ZoneB && (b.Capacity != cloud.OnDemand || b.InstanceType != gcetest.A2) {
			t.Fatalf("backend on-demand %+v", b)
		}
	}
	got, err := e.p.Describe(context.Background(), ids(append(spot, od...)))
	if err != nil || len(got) != 3 {
		t.Fatalf("describe: %v %+v", err, got)
	}
}

func TestCapacityErrorKeepsWhatWasPlaced(t *testing.T) {
	e := newEnv(t)
	key := cloud.OfferingKey{Capacity: cloud.Spot, InstanceType: gcetest.N1V100, Zone: gcetest.ZoneA}
	e.fake.Capacity[key] = 2
	got, err := e.p.Create(context.Background(), cloud.CreateRequest{JobID: "j", Zone: gcetest.ZoneA, InstanceType: gcetest.N1V100, Capacity: cloud.Spot, Count: 4})
	if len(got) != 2 {
		t.Fatalf("want the 2 placed instances, got %d", len(got))
	}
	if !cloud.IsInsufficientCapacity(err) || !cloud.ShouldTryElsewhere(err) {
		t.Fatalf("want a capacity error, got %v", err)
	}
	ce, _ := cloud.AsError(err)
	if ce.Provider != "gcp" || ce.Code != "ZONE_RESOURCE_POOL_EXHAUSTED" || ce.Offering == nil || *ce.Offering != key {
		t.Fatalf("error %+v", ce)
	}
	var u cloud.Unavailable
	if !u.Observe(key, err) || !u.IsUnavailable(key) {
		t.Fatal("the unavailable-offerings cache should take the error")
	}
}

func TestSequentialCreateStopsAtTheFirstStockout(t *testing.T) {
	e := newEnv(t)
	e.p.opts.CreateParallelism = 1
	key := cloud.OfferingKey{Capacity: cloud.Spot, InstanceType: gcetest.A2, Zone: gcetest.ZoneB}
	e.fake.Capacity[key] = 2
	got, err := e.p.Create(context.Background(), cloud.CreateRequest{JobID: "j", Zone: gcetest.ZoneB, InstanceType: gcetest.A2, Capacity: cloud.Spot, Count: 5})
	if len(got) != 2 || !cloud.IsInsufficientCapacity(err) {
		t.Fatalf("got %d, %v", len(got), err)
	}
	if n := e.fake.CallCount("Create"); n != 3 {
		t.Fatalf("the 3rd insert failed, so the 4th and 5th should not be sent; backend saw %d", n)
	}
}

func TestQuotaError(t *testing.T) {
	e := newEnv(t)
	e.fake.InjectError("Create", &cloud.Error{Kind: cloud.ErrQuota, Provider: "gcp", Message: "Quota 'GPUS_ALL_REGIONS' exceeded. Limit: 0.0 globally."})
	got, err := e.p.Create(context.Background(), cloud.CreateRequest{JobID: "j", Zone: gcetest.ZoneA, InstanceType: gcetest.A2, Capacity: cloud.Spot, Count: 1})
	if len(got) != 0 || !cloud.IsQuota(err) || cloud.ShouldTryElsewhere(err) {
		t.Fatalf("got %d, %v", len(got), err)
	}
	if ce, _ := cloud.AsError(err); ce.Code != "QUOTA_EXCEEDED" {
		t.Fatalf("code %q", ce.Code)
	}
}

func TestThrottledCallsAreRetried(t *testing.T) {
	e := newEnv(t)
	e.srv.ThrottleNext(3)
	got := e.create(t, cloud.CreateRequest{JobID: "j", Zone: gcetest.ZoneA, InstanceType: gcetest.A2, Capacity: cloud.Spot, Count: 1})
	if len(got) != 1 || e.srv.Throttling() != 0 {
		t.Fatalf("got %d instances, %d throttles left", len(got), e.srv.Throttling())
	}
	// A backend that throttles is retried too.
	e.fake.InjectError("Describe", &cloud.Error{Kind: cloud.ErrThrottled, Provider: "gcp"})
	if d, err := e.p.Describe(context.Background(), ids(got)); err != nil || len(d) != 1 {
		t.Fatalf("describe after a throttle: %v %+v", err, d)
	}
	// Beyond the attempts, the throttling is reported as such.
	e.srv.ThrottleNext(100)
	_, err := e.p.List(context.Background(), nil)
	if !cloud.IsThrottled(err) || !cloud.Retryable(err) {
		t.Fatalf("want a throttling error, got %v", err)
	}
}

func TestListPagesAcrossZonesAndFindsLeaks(t *testing.T) {
	e := newEnv(t)
	a := e.create(t, cloud.CreateRequest{JobID: "job-a", Zone: gcetest.ZoneA, InstanceType: gcetest.N1V100, Capacity: cloud.Spot, Count: 3})
	a = append(a, e.create(t, cloud.CreateRequest{JobID: "job-a", Zone: gcetest.ZoneB, InstanceType: gcetest.A2, Capacity: cloud.OnDemand, Count: 2})...)
	b := e.create(t, cloud.CreateRequest{JobID: "job-b", Zone: gcetest.ZoneA, InstanceType: gcetest.A2, Capacity: cloud.Spot, Count: 2})

	got, err := e.p.List(context.Background(), map[string]string{cloud.JobTag: "job-a"})
	if err != nil {
		t.Fatal(err)
	}
	if g, w := ids(got), ids(a); len(g) != 5 || !equal(g, w) {
		t.Fatalf("listed %v, want %v", g, w)
	}
	all, err := e.p.List(context.Background(), nil)
	if err != nil || len(all) != 7 {
		t.Fatalf("all: %v, %d", err, len(all))
	}
	if err := e.p.Terminate(context.Background(), ids(a)); err != nil {
		t.Fatal(err)
	}
	if left, _ := e.p.List(context.Background(), map[string]string{cloud.JobTag: "job-a"}); len(left) != 0 {
		t.Fatalf("left after cleanup: %v", ids(left))
	}
	if left, _ := e.p.List(context.Background(), map[string]string{cloud.JobTag: "job-b"}); !equal(ids(left), ids(b)) {
		t.Fatalf("job-b: %v", ids(left))
	}
	// Terminating again, or an id never seen, is fine.
	if err := e.p.Terminate(context.Background(), append(ids(a), "gcp-999999")); err != nil {
		t.Fatal(err)
	}
}

func TestPreemptionSeenThroughZoneOperations(t *testing.T) {
	e := newEnv(t)
	got := e.create(t, cloud.CreateRequest{JobID: "j", Zone: gcetest.ZoneA, InstanceType: gcetest.N1V100, Capacity: cloud.Spot, Count: 3})
	victim, deleted, alive := got[0].ID, got[1].ID, got[2].ID
	e.now = e.now.Add(time.Minute)
	if err := e.fake.Preempt(victim); err != nil {
		t.Fatal(err)
	}
	if err := e.p.Terminate(context.Background(), []string{deleted}); err != nil {
		t.Fatal(err)
	}
	d, err := e.p.Describe(context.Background(), []string{victim, deleted, alive})
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 2 {
		t.Fatalf("want the preempted and the live VM (the deleted one omitted), got %+v", d)
	}
	byID := map[string]cloud.Instance{}
	for _, i := range d {
		byID[i.ID] = i
	}
	v := byID[victim]
	if v.State != cloud.StatePreempted || v.Interruption == nil || v.Interruption.Kind != cloud.Preempted ||
		!v.Interruption.At.Equal(e.now) || v.JobID != "j" || v.InstanceType != gcetest.N1V100 {
		t.Fatalf("preempted VM %+v (%+v)", v, v.Interruption)
	}
	if byID[alive].State != cloud.StateRunning {
		t.Fatalf("live VM %+v", byID[alive])
	}
	verdict, _, err := cloud.ConfirmLost(context.Background(), e.p, victim)
	if err != nil || verdict != cloud.VerdictPreempted {
		t.Fatalf("verdict %v %v", verdict, err)
	}
	if verdict, _, _ := cloud.ConfirmLost(context.Background(), e.p, deleted); verdict != cloud.VerdictGone {
		t.Fatalf("deleted VM verdict %v", verdict)
	}
	// A provider that never saw the VM still finds the preemption, searching the zones.
	fresh, err := New(context.Background(), Options{Project: gcetest.Project, Zones: []string{gcetest.ZoneB, gcetest.ZoneA}, Endpoint: e.srv.URL(),
		Catalog: testCatalog(), PollInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	d, err = fresh.Describe(context.Background(), []string{victim})
	if err != nil || len(d) != 1 || d[0].State != cloud.StatePreempted || d[0].Zone != gcetest.ZoneA {
		t.Fatalf("fresh describe: %v %+v", err, d)
	}
	if l, _ := e.p.List(context.Background(), nil); !equal(ids(l), []string{alive}) {
		t.Fatalf("list after preemption: %v", ids(l))
	}
}

func TestBadInputIsClassified(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cases := []struct {
		name string
		req  cloud.CreateRequest
		want error
	}{
		{"count 0", cloud.CreateRequest{Zone: gcetest.ZoneA, InstanceType: gcetest.A2, Capacity: cloud.Spot, Count: 0}, cloud.ErrInvalidRequest},
		{"no capacity type", cloud.CreateRequest{Zone: gcetest.ZoneA, InstanceType: gcetest.A2, Count: 1}, cloud.ErrInvalidRequest},
		{"no zone", cloud.CreateRequest{InstanceType: gcetest.A2, Capacity: cloud.Spot, Count: 1}, cloud.ErrInvalidRequest},
		{"unknown machine type", cloud.CreateRequest{Zone: gcetest.ZoneA, InstanceType: "n9-bogus-8", Capacity: cloud.Spot, Count: 1}, cloud.ErrInvalidRequest},
		{"unknown accelerator", cloud.CreateRequest{Zone: gcetest.ZoneA, InstanceType: "n1-standard-8+nvidia-tesla-k80:1", Capacity: cloud.Spot, Count: 1}, cloud.ErrInvalidRequest},
		{"unknown zone", cloud.CreateRequest{Zone: "mars-north1-a", InstanceType: gcetest.A2, Capacity: cloud.Spot, Count: 1}, cloud.ErrNotFound},
	}
	for _, c := range cases {
		got, err := e.p.Create(ctx, c.req)
		if len(got) != 0 || !errors.Is(err, c.want) || cloud.ShouldTryElsewhere(err) || cloud.Retryable(err) {
			t.Errorf("%s: got %d instances, %v; want %v", c.name, len(got), err, c.want)
		}
		if _, ok := cloud.AsError(err); !ok {
			t.Errorf("%s: not a *cloud.Error: %v", c.name, err)
		}
	}
	if _, err := NewWithClients(Options{}, nil, nil); err == nil {
		t.Error("a provider without a project should not be built")
	}
}

func TestMetadataWatcherReportsNotice(t *testing.T) {
	e := newEnv(t)
	inst := e.create(t, cloud.CreateRequest{JobID: "j", Zone: gcetest.ZoneA, InstanceType: gcetest.A2, Capacity: cloud.Spot, Count: 1})[0]
	w, err := NewWatcher(WatcherOptions{MetadataURL: e.srv.MetadataURL(inst.ID), Now: func() time.Time { return e.now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if got, err := w.Poll(ctx); err != nil || got != nil {
		t.Fatalf("before the notice: %+v %v", got, err)
	}
	if err := e.fake.AnnounceNotice(inst.ID, e.now.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	noticed := e.now
	got, err := w.Poll(ctx)
	if err != nil || got == nil {
		t.Fatalf("after the notice: %+v %v", got, err)
	}
	if got.Kind != cloud.Notice || got.InstanceID != inst.ID || got.Zone != gcetest.ZoneA ||
		!got.At.Equal(noticed) || !got.Deadline.Equal(noticed.Add(DefaultNoticeLead)) {
		t.Fatalf("interruption %+v", got)
	}
	// The deadline stays where the first TRUE put it.
	e.now = e.now.Add(10 * time.Second)
	if again, _ := w.Poll(ctx); again == nil || !again.Deadline.Equal(got.Deadline) {
		t.Fatalf("second poll %+v", again)
	}
}

func TestMetadataWatcherErrors(t *testing.T) {
	e := newEnv(t)
	w, err := NewWatcher(WatcherOptions{MetadataURL: e.srv.MetadataURL("no-such-vm")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := w.Poll(ctx); err == nil {
		t.Fatal("want an error for a VM the metadata server does not know")
	}
	if _, err := NewWatcher(WatcherOptions{MetadataURL: "::bad"}); err == nil {
		t.Fatal("want an error for a bad URL")
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
