package ec2api

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/internal/testhttp"
)

func testOfferings() []cloud.Offering {
	return []cloud.Offering{
		{Provider: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "p3.2xlarge", GPUType: gpu.V100, GPUsPerInstance: 1, SpotPrice: 0.95, OnDemandPrice: 3.06, SpotCapacity: -1},
		{Provider: "aws", Region: "us-east-1", Zone: "us-east-1b", InstanceType: "p3.2xlarge", GPUType: gpu.V100, GPUsPerInstance: 1, SpotPrice: 0.91, OnDemandPrice: 3.06, SpotCapacity: -1},
		{Provider: "aws", Region: "us-west-2", Zone: "us-west-2a", InstanceType: "p3.2xlarge", GPUType: gpu.V100, GPUsPerInstance: 1, SpotPrice: 0.99, OnDemandPrice: 3.06, SpotCapacity: -1},
	}
}

// harness is a face over a Fake on an httptest server.
type harness struct {
	t    *testing.T
	fake *cloud.Fake
	face *Server
	url  string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	fake := cloud.NewFake("aws", testOfferings()...)
	face := New(fake, Options{})
	srv := httptest.NewServer(face)
	t.Cleanup(srv.Close)
	return &harness{t: t, fake: fake, face: face, url: srv.URL}
}

// post sends an EC2 Query request signed (in scope only) for region.
func (h *harness) post(region string, form url.Values) (int, string) {
	h.t.Helper()
	if form.Get("Version") == "" {
		form.Set("Version", APIVersion)
	}
	req, _ := http.NewRequest(http.MethodPost, h.url+"/", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if region != "" {
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20260101/"+region+"/ec2/aws4_request, SignedHeaders=host, Signature=00")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func runForm(extra map[string]string) url.Values {
	f := url.Values{"Action": {"RunInstances"}, "ImageId": {"ami-1"}, "InstanceType": {"p3.2xlarge"},
		"MinCount": {"1"}, "MaxCount": {"2"}, "Placement.AvailabilityZone": {"us-east-1a"}}
	for k, v := range extra {
		f.Set(k, v)
	}
	return f
}

func TestRunInstancesXML(t *testing.T) {
	h := newHarness(t)
	status, body := h.post("us-east-1", runForm(map[string]string{
		"InstanceMarketOptions.MarketType":                   "spot",
		"InstanceMarketOptions.SpotOptions.SpotInstanceType": "one-time",
		"TagSpecification.1.ResourceType":                    "instance",
		"TagSpecification.1.Tag.1.Key":                       cloud.JobTag,
		"TagSpecification.1.Tag.1.Value":                     "job-7",
		"TagSpecification.1.Tag.2.Key":                       "Name",
		"TagSpecification.1.Tag.2.Value":                     "trainer",
	}))
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var got struct {
		XMLName       xml.Name `xml:"http://ec2.amazonaws.com/doc/2016-11-15/ RunInstancesResponse"`
		RequestID     string   `xml:"requestId"`
		ReservationID string   `xml:"reservationId"`
		Instances     []struct {
			ID        string `xml:"instanceId"`
			State     string `xml:"instanceState>name"`
			Code      int    `xml:"instanceState>code"`
			Zone      string `xml:"placement>availabilityZone"`
			Lifecycle string `xml:"instanceLifecycle"`
			Tags      []struct {
				Key   string `xml:"key"`
				Value string `xml:"value"`
			} `xml:"tagSet>item"`
		} `xml:"instancesSet>item"`
	}
	if err := xml.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	if got.RequestID == "" || !strings.HasPrefix(got.ReservationID, "r-") || len(got.Instances) != 2 {
		t.Fatalf("reply %+v", got)
	}
	in := got.Instances[0]
	if in.State != "running" || in.Code != 16 || in.Zone != "us-east-1a" || in.Lifecycle != "spot" {
		t.Errorf("instance %+v", in)
	}
	tags := map[string]string{}
	for _, tg := range in.Tags {
		tags[tg.Key] = tg.Value
	}
	if tags[cloud.JobTag] != "job-7" || tags["Name"] != "trainer" {
		t.Errorf("tags %v", tags)
	}
	if insts, _ := h.fake.List(t.Context(), map[string]string{cloud.JobTag: "job-7"}); len(insts) != 2 || insts[0].Capacity != cloud.Spot {
		t.Errorf("backend has %+v", insts)
	}
}

func TestErrorXML(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		name   string
		region string
		form   url.Values
		status int
		code   string
	}{
		{"unknown type", "us-east-1", runForm(map[string]string{"InstanceType": "p9.huge"}), 400, "InvalidParameterValue"},
		{"unknown zone", "us-east-1", runForm(map[string]string{"Placement.AvailabilityZone": "us-east-1z"}), 400, "InvalidParameterValue"},
		{"zone of another region", "us-west-2", runForm(nil), 400, "InvalidParameterValue"},
		{"min above max", "us-east-1", runForm(map[string]string{"MinCount": "3"}), 400, "InvalidParameterValue"},
		{"missing image", "us-east-1", runForm(map[string]string{"ImageId": ""}), 400, "MissingParameter"},
		{"unknown action", "", url.Values{"Action": {"RebootEverything"}}, 400, "InvalidAction"},
		{"old version", "", url.Values{"Action": {"DescribeInstances"}, "Version": {"2014-01-01"}}, 400, "NoSuchVersion"},
		{"unknown id", "us-east-1", url.Values{"Action": {"DescribeInstances"}, "InstanceId.1": {"i-nope"}}, 400, "InvalidInstanceID.NotFound"},
		{"bad filter", "us-east-1", url.Values{"Action": {"DescribeInstances"}, "Filter.1.Name": {"color"}, "Filter.1.Value.1": {"red"}}, 400, "InvalidParameterValue"},
		{"ids with max results", "us-east-1", url.Values{"Action": {"DescribeInstances"}, "InstanceId.1": {"x"}, "MaxResults": {"5"}}, 400, "InvalidParameterCombination"},
		{"page too small", "us-east-1", url.Values{"Action": {"DescribeInstances"}, "MaxResults": {"2"}}, 400, "InvalidParameterValue"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := h.post(tc.region, tc.form)
			var e struct {
				XMLName   xml.Name `xml:"Response"`
				Code      string   `xml:"Errors>Error>Code"`
				Message   string   `xml:"Errors>Error>Message"`
				RequestID string   `xml:"RequestID"`
			}
			if err := xml.Unmarshal([]byte(body), &e); err != nil {
				t.Fatalf("decoding %s: %v", body, err)
			}
			if status != tc.status || e.Code != tc.code || e.Message == "" || e.RequestID == "" {
				t.Errorf("got %d %+v, want %d %s", status, e, tc.status, tc.code)
			}
		})
	}
}

func TestBackendErrorsBecomeEC2Codes(t *testing.T) {
	h := newHarness(t)
	key := cloud.OfferingKey{Capacity: cloud.OnDemand, InstanceType: "p3.2xlarge", Zone: "us-east-1a"}
	h.fake.Capacity[key] = 0
	status, body := h.post("us-east-1", runForm(nil))
	if status != 500 || !strings.Contains(body, "<Code>InsufficientInstanceCapacity</Code>") {
		t.Errorf("no capacity: %d %s", status, body)
	}
	h.fake.InjectError("Create", &cloud.Error{Kind: cloud.ErrInsufficientCapacity, Code: "MaxSpotInstanceCountExceeded"})
	if status, body = h.post("us-east-1", runForm(map[string]string{"Placement.AvailabilityZone": "us-east-1b"})); status != 400 || !strings.Contains(body, "MaxSpotInstanceCountExceeded") {
		t.Errorf("backend's own code: %d %s", status, body)
	}
	h.fake.InjectError("Create", cloud.ErrQuota)
	if status, body = h.post("us-east-1", runForm(map[string]string{"Placement.AvailabilityZone": "us-east-1b"})); status != 400 || !strings.Contains(body, "VcpuLimitExceeded") {
		t.Errorf("quota: %d %s", status, body)
	}
	h.fake.InjectError("Describe", cloud.ErrThrottled)
	if status, body = h.post("us-east-1", url.Values{"Action": {"DescribeInstances"}}); status != 503 || !strings.Contains(body, "RequestLimitExceeded") {
		t.Errorf("throttled: %d %s", status, body)
	}
}

func TestPartialBelowMinCountLaunchesNothing(t *testing.T) {
	h := newHarness(t)
	h.fake.Capacity[cloud.OfferingKey{Capacity: cloud.OnDemand, InstanceType: "p3.2xlarge", Zone: "us-east-1a"}] = 1
	status, _ := h.post("us-east-1", runForm(map[string]string{"MinCount": "2"}))
	if status != 500 {
		t.Fatalf("status %d", status)
	}
	if live, _ := h.fake.List(t.Context(), nil); len(live) != 0 {
		t.Errorf("left running: %+v", live)
	}
}

func TestDescribeScopedToRegionAndPaged(t *testing.T) {
	h := newHarness(t)
	for range 3 {
		h.post("us-east-1", runForm(map[string]string{"MaxCount": "3", "MinCount": "3"}))
	}
	h.post("us-west-2", runForm(map[string]string{"Placement.AvailabilityZone": "us-west-2a"}))
	form := url.Values{"Action": {"DescribeInstances"}, "MaxResults": {"5"}}
	var ids []string
	pages := 0
	for {
		status, body := h.post("us-east-1", form)
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		var got struct {
			IDs  []string `xml:"reservationSet>item>instancesSet>item>instanceId"`
			Next string   `xml:"nextToken"`
		}
		if err := xml.Unmarshal([]byte(body), &got); err != nil {
			t.Fatal(err)
		}
		pages++
		ids = append(ids, got.IDs...)
		if got.Next == "" {
			break
		}
		form.Set("NextToken", got.Next)
	}
	if len(ids) != 9 || pages != 2 {
		t.Errorf("got %d ids in %d pages: %v", len(ids), pages, ids)
	}
}

func TestPreemptedShowsSpotTermination(t *testing.T) {
	h := newHarness(t)
	h.post("us-east-1", runForm(map[string]string{"InstanceMarketOptions.MarketType": "spot", "MaxCount": "1"}))
	live, _ := h.fake.List(t.Context(), nil)
	if err := h.fake.Preempt(live[0].ID); err != nil {
		t.Fatal(err)
	}
	_, body := h.post("us-east-1", url.Values{"Action": {"DescribeInstances"}, "InstanceId.1": {live[0].ID}})
	for _, want := range []string{"<name>terminated</name>", "<code>48</code>", "<code>Server.SpotInstanceTermination</code>", "<instanceLifecycle>spot</instanceLifecycle>", "Service initiated ("} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %s in %s", want, body)
		}
	}
	// A filter on the state finds it too; a filter on running does not.
	_, body = h.post("us-east-1", url.Values{"Action": {"DescribeInstances"}, "Filter.1.Name": {"instance-state-name"}, "Filter.1.Value.1": {"running"}})
	if strings.Contains(body, live[0].ID) {
		t.Errorf("preempted instance listed as running: %s", body)
	}
}

func TestSpotPriceHistory(t *testing.T) {
	h := newHarness(t)
	_, body := h.post("us-east-1", url.Values{"Action": {"DescribeSpotPriceHistory"}, "InstanceType.1": {"p3.2xlarge"}, "ProductDescription.1": {"Linux/UNIX"}})
	if !strings.Contains(body, "<spotPrice>0.910000</spotPrice>") || !strings.Contains(body, "us-east-1a") || strings.Contains(body, "us-west-2a") {
		t.Errorf("prices: %s", body)
	}
	_, body = h.post("us-east-1", url.Values{"Action": {"DescribeSpotPriceHistory"}, "ProductDescription.1": {"Windows"}})
	if strings.Contains(body, "spotPrice>") {
		t.Errorf("windows priced: %s", body)
	}
}

func TestThrottleNext(t *testing.T) {
	h := newHarness(t)
	h.face.ThrottleNext(1)
	if status, body := h.post("us-east-1", url.Values{"Action": {"DescribeInstances"}}); status != 503 || !strings.Contains(body, "RequestLimitExceeded") {
		t.Errorf("first: %d %s", status, body)
	}
	if status, _ := h.post("us-east-1", url.Values{"Action": {"DescribeInstances"}}); status != 200 {
		t.Errorf("second: %d", status)
	}
	if n := h.face.Calls("DescribeInstances"); n != 2 {
		t.Errorf("calls %d", n)
	}
}

func TestIMDS(t *testing.T) {
	h := newHarness(t)
	h.post("us-east-1", runForm(map[string]string{"MaxCount": "1"}))
	live, _ := h.fake.List(t.Context(), nil)
	id := live[0].ID
	base := h.url + IMDSPrefix + id + "/latest/"
	do := func(method, path string, hdr map[string]string) (int, string) {
		return testhttp.Do(t, method, base+path, hdr)
	}
	if status, _ := do(http.MethodPut, "api/token", nil); status != 400 {
		t.Errorf("token without ttl: %d", status)
	}
	status, tok := do(http.MethodPut, "api/token", map[string]string{"X-aws-ec2-metadata-token-ttl-seconds": "60"})
	if status != 200 || tok == "" {
		t.Fatalf("token: %d %q", status, tok)
	}
	if status, _ := do(http.MethodGet, "meta-data/instance-id", nil); status != 401 {
		t.Errorf("without token: %d", status)
	}
	auth := map[string]string{"X-aws-ec2-metadata-token": tok}
	if status, body := do(http.MethodGet, "meta-data/instance-id", auth); status != 200 || body != id {
		t.Errorf("instance-id: %d %q", status, body)
	}
	if status, _ := do(http.MethodGet, "meta-data/spot/instance-action", auth); status != 404 {
		t.Errorf("before notice: %d", status)
	}
	deadline := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	if err := h.fake.AnnounceNotice(id, deadline); err != nil {
		t.Fatal(err)
	}
	status, body := do(http.MethodGet, "meta-data/spot/instance-action", auth)
	if status != 200 || body != `{"action":"terminate","time":"2026-03-04T05:06:07Z"}` {
		t.Errorf("after notice: %d %s", status, body)
	}
	// A token is good for its own instance only.
	req, _ := http.NewRequest(http.MethodGet, h.url+IMDSPrefix+"other/latest/meta-data/instance-id", nil)
	req.Header.Set("X-aws-ec2-metadata-token", tok)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Errorf("token of another instance accepted: %v %v", resp, err)
	}
}

func TestWildcard(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		want bool
	}{{"job-*", "job-1", true}, {"job-?", "job-12", false}, {"*", "", true}, {"a*c", "abbc", true}, {"a*c", "abcd", false}, {"exact", "exact", true}} {
		if got := wildcard(tc.p, tc.s); got != tc.want {
			t.Errorf("wildcard(%q, %q) = %v", tc.p, tc.s, got)
		}
	}
}

// scaledFake is a backend whose clock runs 60 times faster than the wall clock, as the
// simulated market's does under `schooner dev --time-scale 60`.
type scaledFake struct{ *cloud.Fake }

func (scaledFake) TimeScale() cloud.TimeScale { return 60 }

// The metadata of a machine of a simulated market says in wall time when it will be taken:
// a notice 2 simulated minutes ahead at 60x is due in 2 wall seconds, not in 2 minutes or
// at some simulated date.
func TestIMDSNoticeTimeIsWallTime(t *testing.T) {
	fake := cloud.NewFake("aws", testOfferings()...)
	simNow := time.Date(2023, 8, 27, 12, 0, 0, 0, time.UTC)
	face := New(scaledFake{fake}, Options{Now: func() time.Time { return simNow }})
	srv := httptest.NewServer(face)
	t.Cleanup(srv.Close)
	h := &harness{t: t, fake: fake, face: face, url: srv.URL}
	h.post("us-east-1", runForm(map[string]string{"MaxCount": "1"}))
	live, _ := fake.List(t.Context(), nil)
	id := live[0].ID
	base := srv.URL + IMDSPrefix + id + "/latest/"
	_, tok := testhttp.Do(t, http.MethodPut, base+"api/token", map[string]string{"X-aws-ec2-metadata-token-ttl-seconds": "60"})
	if err := fake.AnnounceNotice(id, simNow.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	status, body := testhttp.Do(t, http.MethodGet, base+"meta-data/spot/instance-action", map[string]string{"X-aws-ec2-metadata-token": tok})
	if status != 200 {
		t.Fatalf("instance-action: %d %s", status, body)
	}
	var action struct{ Action, Time string }
	if err := json.Unmarshal([]byte(body), &action); err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339, action.Time)
	if err != nil {
		t.Fatal(err)
	}
	if until := time.Until(at); until < -time.Second || until > 3*time.Second {
		t.Errorf("the notice is due %s from now on the wall clock (%s), want about 2 s", until, action.Time)
	}
}
