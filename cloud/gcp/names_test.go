package gcp

import (
	"regexp"
	"strings"
	"testing"

	"github.com/schooner-ml/schooner/cloud/sim/gceapi/gcetest"
)

var (
	gceName  = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
	gceLabel = regexp.MustCompile(`^[-_a-z0-9]{0,63}$`)
	uuidRE   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
)

func TestInstanceNamesAreValid(t *testing.T) {
	long := strings.Repeat("Very Long Job ", 10)
	for _, c := range []struct{ prefix, job, token string }{
		{"schooner", "job-1", "tok"},
		{"Schooner", "Job_42/train", ""},
		{"9lives", "", "t"},
		{"schooner", long, "t"},
		{"", "---", ""},
	} {
		name := instanceName(c.prefix, c.job, c.token, 12)
		if !gceName.MatchString(name) || !strings.HasSuffix(name, "-12") {
			t.Errorf("%+v: invalid name %q", c, name)
		}
	}
	if a, b := instanceName("s", "j", "tok", 1), instanceName("s", "j", "tok", 1); a != b {
		t.Errorf("a client token should give the same names: %q %q", a, b)
	}
	if a, b := instanceName("s", "j", "", 1), instanceName("s", "j", "", 1); a == b {
		t.Errorf("without a token two Creates should not collide: %q", a)
	}
	if got := instanceName("schooner", "Job_42", "tok", 3); !strings.HasPrefix(got, "schooner-job-42-") {
		t.Errorf("name %q", got)
	}
}

func TestLabelsAreFolded(t *testing.T) {
	cases := map[string]string{"Job_42": "job_42", "ml infra/A": "ml_infra_a", strings.Repeat("x", 80): strings.Repeat("x", 63)}
	for in, want := range cases {
		if got := labelValue(in); got != want || !gceLabel.MatchString(got) {
			t.Errorf("labelValue(%q) = %q, want %q", in, got, want)
		}
	}
	if got := labelKey("1st"); got != "k1st" {
		t.Errorf("labelKey = %q", got)
	}
	if got := labelFilter(map[string]string{"schooner-job": "Job A", "b": "x"}); got != `labels.b = "x" AND labels.schooner-job = "job_a"` {
		t.Errorf("filter %q", got)
	}
}

func TestRequestIDs(t *testing.T) {
	if requestID("", 1, 1) != "" {
		t.Error("no token, no request id")
	}
	a, b := requestID("tok", 1, 1), requestID("tok", 1, 2)
	if !uuidRE.MatchString(a) || !uuidRE.MatchString(b) || a == b || a != requestID("tok", 1, 1) {
		t.Errorf("request ids %q %q", a, b)
	}
}

func TestShapes(t *testing.T) {
	p, err := NewWithClients(Options{Project: "p", Zones: []string{"us-central1-a"}, Catalog: testCatalog()}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := p.shapeOf(gcetest.N1V100); s.MachineType != "n1-standard-8" || s.AcceleratorType != "nvidia-tesla-v100" || s.AcceleratorCount != 1 {
		t.Errorf("catalog shape %+v", s)
	}
	if s := p.shapeOf("n1-standard-16+nvidia-tesla-t4:2"); s.MachineType != "n1-standard-16" || s.AcceleratorType != "nvidia-tesla-t4" || s.AcceleratorCount != 2 {
		t.Errorf("shape from the naming convention %+v", s)
	}
	// GCE lists an A2's built-in GPU as a guest accelerator; it is still the catalog's a2.
	if s := p.shapeNamed(gcetest.A2, "nvidia-tesla-a100", 1); s.Name != gcetest.A2 {
		t.Errorf("a2 read back as %+v", s)
	}
	if s := p.shapeNamed("n1-standard-8", "nvidia-tesla-v100", 1); s.Name != gcetest.N1V100 {
		t.Errorf("n1 read back as %+v", s)
	}
}
