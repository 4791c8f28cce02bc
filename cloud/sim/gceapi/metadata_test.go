package gceapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/schooner-ml/schooner/cloud/sim/gceapi/gcetest"
	"github.com/schooner-ml/schooner/internal/testhttp"
)

func getMetadata(t *testing.T, url string, flavor bool) (int, string) {
	t.Helper()
	var hdr map[string]string
	if flavor {
		hdr = map[string]string{"Metadata-Flavor": "Google"}
	}
	return testhttp.Do(t, "GET", url, hdr)
}

func TestMetadataPerVM(t *testing.T) {
	f := newFace(t)
	name := f.insert(t, gcetest.ZoneA, spotV100("vm-1", "DELETE", nil))
	other := f.insert(t, gcetest.ZoneA, spotV100("vm-2", "DELETE", nil))
	base := f.srv.MetadataURL(name) + "/computeMetadata/v1/"

	if code, _ := getMetadata(t, base+"instance/preempted", false); code != http.StatusForbidden {
		t.Fatalf("without Metadata-Flavor: %d", code)
	}
	if code, v := getMetadata(t, base+"instance/preempted", true); code != 200 || v != "FALSE" {
		t.Fatalf("before notice: %d %q", code, v)
	}
	if err := f.fake.AnnounceNotice(name, time.Now().Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, v := getMetadata(t, base+"instance/preempted", true); v != "TRUE" {
		t.Fatalf("after notice: %q", v)
	}
	if _, v := getMetadata(t, f.srv.MetadataURL(other)+"/computeMetadata/v1/instance/preempted", true); v != "FALSE" {
		t.Fatalf("the other VM: %q", v)
	}
	if _, v := getMetadata(t, base+"instance/name", true); v != name {
		t.Fatalf("name %q", v)
	}
	got, err := f.inst.Get(context.Background(), getReq(name))
	if err != nil {
		t.Fatal(err)
	}
	if _, v := getMetadata(t, base+"instance/id", true); v != itoa(got.GetId()) {
		t.Fatalf("id %q, API says %d", v, got.GetId())
	}
	if code, _ := getMetadata(t, f.srv.MetadataURL("nope")+"/computeMetadata/v1/instance/preempted", true); code != 404 {
		t.Fatalf("unknown VM: %d", code)
	}
	if code, _ := getMetadata(t, base+"instance/unknown-key", true); code != 404 {
		t.Fatalf("unknown key: %d", code)
	}
}
