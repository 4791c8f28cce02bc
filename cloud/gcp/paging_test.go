package gcp

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/api/option"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/sim/gceapi/gcetest"
)

// countingTransport counts the list calls the clients make, per path.
type countingTransport struct {
	mu    sync.Mutex
	lists map[string]int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && (strings.HasSuffix(r.URL.Path, "/instances") || strings.HasSuffix(r.URL.Path, "/operations")) {
		c.mu.Lock()
		c.lists[r.URL.Path]++
		c.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestListAndPreemptionsReadEveryPage(t *testing.T) {
	e := newEnv(t)
	got := e.create(t, cloud.CreateRequest{JobID: "j", Zone: gcetest.ZoneA, InstanceType: gcetest.A2, Capacity: cloud.Spot, Count: 5})
	for _, inst := range got[:3] {
		if err := e.fake.Preempt(inst.ID); err != nil {
			t.Fatal(err)
		}
	}
	ct := &countingTransport{lists: map[string]int{}}
	p, err := New(context.Background(), Options{
		Project: gcetest.Project, Zones: []string{gcetest.ZoneA}, Endpoint: e.srv.URL(), Catalog: testCatalog(),
		PageSize: 2, PollInterval: time.Millisecond,
		ClientOptions: []option.ClientOption{option.WithHTTPClient(&http.Client{Transport: ct})},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	e.create(t, cloud.CreateRequest{JobID: "j", Zone: gcetest.ZoneA, InstanceType: gcetest.A2, Capacity: cloud.Spot, Count: 1})

	live, err := p.List(context.Background(), map[string]string{cloud.JobTag: "j"})
	if err != nil || len(live) != 3 {
		t.Fatalf("list: %v, %d live", err, len(live))
	}
	d, err := p.Describe(context.Background(), ids(got[:3]))
	if err != nil || len(d) != 3 {
		t.Fatalf("describe: %v %+v", err, d)
	}
	for _, inst := range d {
		if inst.State != cloud.StatePreempted {
			t.Fatalf("%s is %s", inst.ID, inst.State)
		}
	}
	base := "/compute/v1/projects/" + gcetest.Project + "/zones/" + gcetest.ZoneA
	if n := ct.lists[base+"/instances"]; n != 2 {
		t.Errorf("3 live VMs in pages of 2 should take 2 list calls, took %d", n)
	}
	if n := ct.lists[base+"/operations"]; n != 2 {
		t.Errorf("3 preemptions in pages of 2 should take 2 calls (once per Describe), took %d", n)
	}
}
