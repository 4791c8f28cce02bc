// Package deploy_test checks deploy/ without a cluster or a container engine: the Helm chart
// lints and renders (helm comes through go.mod's tool directive), every rendered manifest
// decodes strictly into the Kubernetes API types of its kind (a misspelt or misplaced field
// fails), the workloads run unprivileged, and the compose file passes the Compose
// specification's schema.
package deploy_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// helm runs `go tool helm` with args and returns its standard output.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(goBin, append([]string{"tool", "helm"}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	require.NoError(t, cmd.Run(), "helm %v: %s", args, errOut.String())
	return out.String()
}

func TestTheChartLints(t *testing.T) {
	out := helm(t, "lint", "--strict", "helm/schooner")
	assert.Contains(t, out, "1 chart(s) linted, 0 chart(s) failed")
}

// manifests renders the chart with extra --set values and splits the documents.
func manifests(t *testing.T, set ...string) [][]byte {
	t.Helper()
	args := []string{"template", "test", "helm/schooner"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	var docs [][]byte
	for _, doc := range strings.Split(helm(t, args...), "\n---") {
		if strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(doc), "---")) != "" {
			docs = append(docs, []byte(doc))
		}
	}
	require.NotEmpty(t, docs)
	return docs
}

func TestEveryRenderedManifestIsAValidObjectOfItsKind(t *testing.T) {
	for _, values := range [][]string{
		nil,
		{"temporal.tlsSecret=schooner-tls"},
		{"temporal.apiKeySecret=temporal-cloud", "control.replicas=3"},
	} {
		kinds := map[string]int{}
		for _, doc := range manifests(t, values...) {
			var meta struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			require.NoError(t, yaml.Unmarshal(doc, &meta))
			kinds[meta.Kind]++
			var spec *corev1.PodSpec
			var selector, labels map[string]string
			switch meta.APIVersion + "/" + meta.Kind {
			case "apps/v1/Deployment":
				var d appsv1.Deployment
				require.NoError(t, yaml.UnmarshalStrict(doc, &d), "%v\n%s", values, doc)
				spec, selector, labels = &d.Spec.Template.Spec, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels
				// Without --cloud a control worker serves workflows only and no job runs.
				assert.Contains(t, spec.Containers[0].Args, "--cloud=aws", "%v", values)
			case "apps/v1/DaemonSet":
				var d appsv1.DaemonSet
				require.NoError(t, yaml.UnmarshalStrict(doc, &d), "%v\n%s", values, doc)
				spec, selector, labels = &d.Spec.Template.Spec, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels
			default:
				t.Fatalf("%v: the chart renders a %s/%s this test does not check", values, meta.APIVersion, meta.Kind)
			}
			for k, v := range selector {
				assert.Equal(t, v, labels[k], "%s: the selector must match the pod labels", meta.Kind)
			}
			checkUnprivileged(t, meta.Kind, spec)
		}
		assert.Equal(t, map[string]int{"Deployment": 1, "DaemonSet": 1}, kinds, "%v", values)
	}
}

// checkUnprivileged: a node agent runs job commands, so neither workload may run as root or
// gain privileges.
func checkUnprivileged(t *testing.T, kind string, spec *corev1.PodSpec) {
	t.Helper()
	require.NotEmpty(t, spec.Containers)
	for _, c := range spec.Containers {
		assert.NotEmpty(t, c.Image, kind)
		sc := c.SecurityContext
		require.NotNil(t, sc, "%s/%s has no securityContext", kind, c.Name)
		require.NotNil(t, sc.RunAsNonRoot, "%s/%s", kind, c.Name)
		assert.True(t, *sc.RunAsNonRoot, "%s/%s", kind, c.Name)
		require.NotNil(t, sc.AllowPrivilegeEscalation, "%s/%s", kind, c.Name)
		assert.False(t, *sc.AllowPrivilegeEscalation, "%s/%s", kind, c.Name)
		require.NotNil(t, sc.Capabilities, "%s/%s", kind, c.Name)
		assert.Contains(t, sc.Capabilities.Drop, corev1.Capability("ALL"), "%s/%s", kind, c.Name)
	}
}

func TestTheComposeFilePassesTheComposeSchema(t *testing.T) {
	path, err := filepath.Abs("compose/compose.yaml")
	require.NoError(t, err)
	project, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  filepath.Dir(path),
		ConfigFiles: []types.ConfigFile{{Filename: path}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) { o.SetProjectName("schooner", true) })
	require.NoError(t, err)
	names := project.ServiceNames()
	for _, want := range []string{"postgresql", "temporal", "temporal-ui", "schooner-control", "schooner-node"} {
		assert.Contains(t, names, want)
	}
	for _, name := range []string{"schooner-control", "schooner-node"} {
		svc := project.Services[name]
		require.NotNil(t, svc.Build, name)
		assert.Equal(t, "deploy/Dockerfile", svc.Build.Dockerfile, name)
	}
	assert.Equal(t, "agentonly", *project.Services["schooner-node"].Build.Args["TAGS"])
}

func TestTheImageRunsUnprivileged(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var user string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "USER" {
			user = f[1]
		}
	}
	assert.NotEmpty(t, user, "the final stage sets a USER")
	uid, _, _ := strings.Cut(user, ":")
	assert.NotContains(t, []string{"root", "0"}, uid)
}
