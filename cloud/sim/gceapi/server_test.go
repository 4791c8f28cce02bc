package gceapi_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/sim/gceapi"
	"github.com/schooner-ml/schooner/cloud/sim/gceapi/gcetest"
	"github.com/schooner-ml/schooner/gpu"
)

// face is the Compute face over a Fake, with the real REST clients pointed at it.
type face struct {
	fake *cloud.Fake
	srv  *gceapi.Server
	inst *compute.InstancesClient
	ops  *compute.ZoneOperationsClient
}

func newFace(t *testing.T) *face {
	t.Helper()
	var offers []cloud.Offering
	for _, z := range []string{gcetest.ZoneA, gcetest.ZoneB} {
		offers = append(offers,
			cloud.Offering{Provider: "gcp", Region: "us-central1", Zone: z, InstanceType: gcetest.A2, GPUType: gpu.A100_40, GPUsPerInstance: 1, SpotPrice: 1.2, OnDemandPrice: 3.67, SpotCapacity: -1},
			cloud.Offering{Provider: "gcp", Region: "us-central1", Zone: z, InstanceType: gcetest.N1V100, GPUType: gpu.V100, GPUsPerInstance: 1, SpotPrice: 0.9, OnDemandPrice: 2.86, SpotCapacity: -1},
		)
	}
	f := &face{fake: cloud.NewFake("gcp", offers...)}
	f.srv = gcetest.Start(t, f.fake)
	ctx := context.Background()
	opts := []option.ClientOption{option.WithEndpoint(f.srv.URL()), option.WithoutAuthentication()}
	var err error
	if f.inst, err = compute.NewInstancesRESTClient(ctx, opts...); err != nil {
		t.Fatal(err)
	}
	if f.ops, err = compute.NewZoneOperationsRESTClient(ctx, opts...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.inst.Close(); f.ops.Close() })
	return f
}

func spotV100(name, action string, labels map[string]string) *computepb.Instance {
	return spotV100In(gcetest.ZoneA, name, action, labels)
}

// spotV100In spells the machine type as a partial path and the accelerator as a full URL,
// the two forms clients use.
func spotV100In(zone, name, action string, labels map[string]string) *computepb.Instance {
	return &computepb.Instance{
		Name:        proto.String(name),
		MachineType: proto.String("zones/" + zone + "/machineTypes/n1-standard-8"),
		GuestAccelerators: []*computepb.AcceleratorConfig{{
			AcceleratorType: proto.String("https://www.googleapis.com/compute/v1/projects/" + gcetest.Project + "/zones/" + zone + "/acceleratorTypes/nvidia-tesla-v100"), AcceleratorCount: proto.Int32(1),
		}},
		Scheduling: &computepb.Scheduling{
			ProvisioningModel: proto.String("SPOT"), InstanceTerminationAction: proto.String(action),
			OnHostMaintenance: proto.String("TERMINATE"), AutomaticRestart: proto.Bool(false),
		},
		Labels: labels,
	}
}

// insert creates one VM with the real client and Operation.Wait, and returns its name.
func (f *face) insert(t *testing.T, zone string, in *computepb.Instance) string {
	t.Helper()
	ctx := context.Background()
	op, err := f.inst.Insert(ctx, &computepb.InsertInstanceRequest{Project: gcetest.Project, Zone: zone, InstanceResource: in})
	if err != nil {
		t.Fatalf("insert: %v", err)
	}
	if op.Done() {
		t.Fatal("insert reply should be a running operation")
	}
	if err := op.Wait(ctx); err != nil {
		t.Fatalf("wait: %v", err)
	}
	return lastSegment(op.Proto().GetTargetLink())
}

func lastSegment(s string) string {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return s[i+1:]
		}
	}
	return s
}

func apiCode(t *testing.T, err error) (int, string) {
	t.Helper()
	var g *googleapi.Error
	if !errors.As(err, &g) {
		t.Fatalf("want a googleapi.Error, got %T %v", err, err)
	}
	reason := ""
	if len(g.Errors) > 0 {
		reason = g.Errors[0].Reason
	}
	return g.Code, reason
}

func TestInsertGetDeleteWithRealClient(t *testing.T) {
	f := newFace(t)
	ctx := context.Background()
	name := f.insert(t, gcetest.ZoneA, spotV100("my-vm", "DELETE", map[string]string{cloud.JobTag: "job-1"}))
	if name != "gcp-000001" {
		t.Fatalf("VM name should be the backend id, got %q", name)
	}
	got, err := f.inst.Get(ctx, &computepb.GetInstanceRequest{Project: gcetest.Project, Zone: gcetest.ZoneA, Instance: name})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetStatus() != "RUNNING" || got.GetScheduling().GetProvisioningModel() != "SPOT" ||
		got.GetScheduling().GetInstanceTerminationAction() != "DELETE" || got.GetLabels()[cloud.JobTag] != "job-1" {
		t.Fatalf("unexpected instance %v", got)
	}
	if len(got.GetGuestAccelerators()) != 1 || lastSegment(got.GetGuestAccelerators()[0].GetAcceleratorType()) != "nvidia-tesla-v100" {
		t.Fatalf("accelerators %v", got.GetGuestAccelerators())
	}
	if got.GetId() == 0 || lastSegment(got.GetMachineType()) != "n1-standard-8" {
		t.Fatalf("id %d, machine type %q", got.GetId(), got.GetMachineType())
	}
	backend, _ := f.fake.Describe(ctx, []string{name})
	if len(backend) != 1 || backend[0].InstanceType != gcetest.N1V100 || backend[0].Capacity != cloud.Spot || backend[0].JobID != "job-1" {
		t.Fatalf("backend instance %+v", backend)
	}

	op, err := f.inst.Delete(ctx, &computepb.DeleteInstanceRequest{Project: gcetest.Project, Zone: gcetest.ZoneA, Instance: name})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = f.inst.Get(ctx, &computepb.GetInstanceRequest{Project: gcetest.Project, Zone: gcetest.ZoneA, Instance: name})
	if code, reason := apiCode(t, err); code != http.StatusNotFound || reason != "notFound" {
		t.Fatalf("after delete: %d %s", code, reason)
	}
	_, err = f.inst.Delete(ctx, &computepb.DeleteInstanceRequest{Project: gcetest.Project, Zone: gcetest.ZoneA, Instance: name})
	if code, _ := apiCode(t, err); code != http.StatusNotFound {
		t.Fatalf("second delete: %v", err)
	}
}

func TestStockoutIsAnOperationError(t *testing.T) {
	f := newFace(t)
	f.fake.Capacity[cloud.OfferingKey{Capacity: cloud.Spot, InstanceType: gcetest.N1V100, Zone: gcetest.ZoneA}] = 0
	ctx := context.Background()
	op, err := f.inst.Insert(ctx, &computepb.InsertInstanceRequest{Project: gcetest.Project, Zone: gcetest.ZoneA, InstanceResource: spotV100("vm-1", "DELETE", nil)})
	if err != nil {
		t.Fatalf("insert itself should succeed, as on GCE: %v", err)
	}
	err = op.Wait(ctx)
	if code, _ := apiCode(t, err); code != http.StatusServiceUnavailable {
		t.Fatalf("Wait should fail with the operation's HTTP status, got %v", err)
	}
	errs := op.Proto().GetError().GetErrors()
	if len(errs) != 1 || errs[0].GetCode() != gceapi.CodeZoneResourcePoolExhausted {
		t.Fatalf("operation errors %v", errs)
	}
	if op.Proto().GetStatus() != computepb.Operation_DONE || lastSegment(op.Proto().GetTargetLink()) != "vm-1" {
		t.Fatalf("operation %v", op.Proto())
	}
}

func TestQuotaIsAnOperationError(t *testing.T) {
	f := newFace(t)
	f.fake.InjectError("Create", &cloud.Error{Kind: cloud.ErrQuota, Provider: "gcp", Message: "Quota 'NVIDIA_V100_GPUS' exceeded. Limit: 0.0 in region us-central1."})
	ctx := context.Background()
	op, err := f.inst.Insert(ctx, &computepb.InsertInstanceRequest{Project: gcetest.Project, Zone: gcetest.ZoneA, InstanceResource: spotV100("vm-1", "DELETE", nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(ctx); err == nil {
		t.Fatal("want an error")
	}
	if errs := op.Proto().GetError().GetErrors(); len(errs) != 1 || errs[0].GetCode() != gceapi.CodeQuotaExceeded {
		t.Fatalf("operation errors %v", errs)
	}
}

func TestBadInsertsAreRejected(t *testing.T) {
	f := newFace(t)
	ctx := context.Background()
	insert := func(zone string, in *computepb.Instance) error {
		_, err := f.inst.Insert(ctx, &computepb.InsertInstanceRequest{Project: gcetest.Project, Zone: zone, InstanceResource: in})
		return err
	}
	bogus := spotV100("vm-1", "DELETE", nil)
	bogus.MachineType = proto.String("zones/" + gcetest.ZoneA + "/machineTypes/n9-bogus-8")
	noAccel := spotV100("vm-1", "DELETE", nil)
	noAccel.GuestAccelerators[0].AcceleratorType = proto.String("nvidia-tesla-k80")
	migrating := spotV100("vm-1", "", nil)
	migrating.Scheduling = &computepb.Scheduling{OnHostMaintenance: proto.String("MIGRATE")}
	badLabel := spotV100("vm-1", "DELETE", map[string]string{"Job": "x"})
	cases := []struct {
		name   string
		zone   string
		in     *computepb.Instance
		code   int
		reason string
	}{
		{"unknown machine type", gcetest.ZoneA, bogus, 400, "invalid"},
		{"accelerator not offered", gcetest.ZoneA, noAccel, 400, "invalid"},
		{"unknown zone", "mars-north1-a", spotV100("vm-1", "DELETE", nil), 404, "notFound"},
		{"bad name", gcetest.ZoneA, spotV100("VM_1", "DELETE", nil), 400, "invalid"},
		{"gpu vm that would live-migrate", gcetest.ZoneA, migrating, 400, "invalid"},
		{"bad label key", gcetest.ZoneA, badLabel, 400, "invalid"},
	}
	for _, c := range cases {
		code, reason := apiCode(t, insert(c.zone, c.in))
		if code != c.code || reason != c.reason {
			t.Errorf("%s: got %d %s, want %d %s", c.name, code, reason, c.code, c.reason)
		}
	}
	if n := f.fake.CallCount("Create"); n != 0 {
		t.Fatalf("bad inserts reached the backend %d times", n)
	}
}

func TestThrottleNext(t *testing.T) {
	f := newFace(t)
	ctx := context.Background()
	name := f.insert(t, gcetest.ZoneA, spotV100("vm-1", "DELETE", nil))
	f.srv.ThrottleNext(1)
	_, err := f.inst.Get(ctx, &computepb.GetInstanceRequest{Project: gcetest.Project, Zone: gcetest.ZoneA, Instance: name})
	if code, reason := apiCode(t, err); code != http.StatusTooManyRequests || reason != "rateLimitExceeded" {
		t.Fatalf("got %d %s", code, reason)
	}
	if _, err := f.inst.Get(ctx, &computepb.GetInstanceRequest{Project: gcetest.Project, Zone: gcetest.ZoneA, Instance: name}); err != nil {
		t.Fatalf("throttling should be over: %v", err)
	}
}

func TestRequestIDMakesInsertIdempotent(t *testing.T) {
	f := newFace(t)
	ctx := context.Background()
	req := &computepb.InsertInstanceRequest{Project: gcetest.Project, Zone: gcetest.ZoneA, RequestId: proto.String("5f0c3a2e-8b1d-4c6e-9a7f-1b2c3d4e5f60"),
		InstanceResource: spotV100("vm-1", "DELETE", nil)}
	for i := 0; i < 2; i++ {
		op, err := f.inst.Insert(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if err := op.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.fake.CallCount("Create"); n != 1 {
		t.Fatalf("backend Create called %d times", n)
	}
}

func TestListFiltersAndPages(t *testing.T) {
	f := newFace(t)
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		f.insert(t, gcetest.ZoneA, spotV100("vm-a", "DELETE", map[string]string{cloud.JobTag: "job-a"}))
	}
	for i := 0; i < 2; i++ {
		f.insert(t, gcetest.ZoneA, spotV100("vm-b", "DELETE", map[string]string{cloud.JobTag: "job-b"}))
	}
	f.insert(t, gcetest.ZoneB, spotV100In(gcetest.ZoneB, "vm-c", "DELETE", map[string]string{cloud.JobTag: "job-a"}))

	it := f.inst.List(ctx, &computepb.ListInstancesRequest{Project: gcetest.Project, Zone: gcetest.ZoneA, Filter: proto.String(`labels.schooner-job = "job-a"`)})
	pages, total := 0, 0
	token := ""
	for {
		var page []*computepb.Instance
		next, err := iterator.NewPager(it, 2, token).NextPage(&page)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		total += len(page)
		for _, in := range page {
			if in.GetLabels()[cloud.JobTag] != "job-a" || lastSegment(in.GetZone()) != gcetest.ZoneA {
				t.Fatalf("filter let through %v", in)
			}
		}
		if next == "" {
			break
		}
		token = next
		it = f.inst.List(ctx, &computepb.ListInstancesRequest{Project: gcetest.Project, Zone: gcetest.ZoneA, Filter: proto.String(`labels.schooner-job = "job-a"`)})
	}
	if total != 5 || pages != 3 {
		t.Fatalf("got %d instances in %d pages, want 5 in 3", total, pages)
	}

	// The iterator walks the pages by itself too.
	it = f.inst.List(ctx, &computepb.ListInstancesRequest{Project: gcetest.Project, Zone: gcetest.ZoneA, MaxResults: proto.Uint32(3)})
	if n := len(drain(t, it.Next)); n != 7 {
		t.Fatalf("unfiltered list: %d, want 7", n)
	}

	_, err := f.inst.List(ctx, &computepb.ListInstancesRequest{Project: gcetest.Project, Zone: gcetest.ZoneA, Filter: proto.String(`name = "a" OR name = "b"`)}).Next()
	if code, _ := apiCode(t, err); code != http.StatusBadRequest {
		t.Fatalf("unsupported filter: %v", err)
	}
}

func TestPreemptionLeavesAZoneOperation(t *testing.T) {
	f := newFace(t)
	ctx := context.Background()
	stopped := f.insert(t, gcetest.ZoneA, spotV100("vm-1", "STOP", nil))
	deleted := f.insert(t, gcetest.ZoneA, spotV100("vm-2", "DELETE", nil))
	kept := f.insert(t, gcetest.ZoneA, spotV100("vm-3", "DELETE", nil))
	for _, id := range []string{stopped, deleted} {
		if err := f.fake.Preempt(id); err != nil {
			t.Fatal(err)
		}
	}
	got, err := f.inst.Get(ctx, &computepb.GetInstanceRequest{Project: gcetest.Project, Zone: gcetest.ZoneA, Instance: stopped})
	if err != nil || got.GetStatus() != "TERMINATED" {
		t.Fatalf("STOP VM after preemption: %v %v", got.GetStatus(), err)
	}
	_, err = f.inst.Get(ctx, &computepb.GetInstanceRequest{Project: gcetest.Project, Zone: gcetest.ZoneA, Instance: deleted})
	if code, _ := apiCode(t, err); code != http.StatusNotFound {
		t.Fatalf("DELETE VM after preemption: %v", err)
	}

	it := f.ops.List(ctx, &computepb.ListZoneOperationsRequest{Project: gcetest.Project, Zone: gcetest.ZoneA,
		Filter: proto.String(`operationType="compute.instances.preempted"`)})
	targets := map[string]bool{}
	for _, op := range drain(t, it.Next) {
		if op.GetOperationType() != gceapi.OperationTypePreempted || op.GetStatus() != computepb.Operation_DONE {
			t.Fatalf("filter let through %v", op)
		}
		targets[lastSegment(op.GetTargetLink())] = true
	}
	if len(targets) != 2 || !targets[stopped] || !targets[deleted] || targets[kept] {
		t.Fatalf("preempted targets %v", targets)
	}

	// The STOP VM still lists, TERMINATED; the DELETE VM does not.
	it2 := f.inst.List(ctx, &computepb.ListInstancesRequest{Project: gcetest.Project, Zone: gcetest.ZoneA})
	listed := map[string]string{}
	for _, in := range drain(t, it2.Next) {
		listed[in.GetName()] = in.GetStatus()
	}
	if listed[stopped] != "TERMINATED" || listed[kept] != "RUNNING" || listed[deleted] != "" {
		t.Fatalf("listed %v", listed)
	}
}

// drain reads every item a list iterator yields, walking all pages, and fails the test on
// any error other than the end of the list.
func drain[T any](t *testing.T, next func() (T, error)) []T {
	t.Helper()
	var out []T
	for {
		x, err := next()
		if err == iterator.Done {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, x)
	}
}

func TestOperationGetUnknown(t *testing.T) {
	f := newFace(t)
	_, err := f.ops.Get(context.Background(), &computepb.GetZoneOperationRequest{Project: gcetest.Project, Zone: gcetest.ZoneA, Operation: "operation-nope"})
	if code, _ := apiCode(t, err); code != http.StatusNotFound {
		t.Fatalf("got %v", err)
	}
}

func TestOtherProjectsAreNotServed(t *testing.T) {
	f := newFace(t)
	_, err := f.inst.Get(context.Background(), &computepb.GetInstanceRequest{Project: "someone-else", Zone: gcetest.ZoneA, Instance: "x"})
	if code, _ := apiCode(t, err); code != http.StatusNotFound {
		t.Fatalf("got %v", err)
	}
}
