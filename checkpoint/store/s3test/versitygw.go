// Package s3test runs a real S3 service for tests: versitygw with its posix backend in a
// temporary directory. Tests of the S3 store and of the checkpoint remote tier use it so they
// exercise multipart uploads, checksums and listings as a real service implements them.
//
// Nothing has to be installed by hand: Binary finds versitygw or builds release Version once
// per machine (internal/gotool: PATH, $(go env GOPATH)/bin, else `go install` into
// os.UserCacheDir()/schooner/tools/versitygw-Version; the first build takes a minute or two).
// A missing or unbuildable versitygw fails the tests, never skips them.
package s3test

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/internal/gotool"
	"github.com/schooner-ml/schooner/internal/netaddr"
	"github.com/schooner-ml/schooner/internal/syncbuf"
)

// Version is the versitygw release the tests are written against.
const Version = "v1.8.0"

// Package is the versitygw command's import path.
const Package = "github.com/versity/versitygw/cmd/versitygw"

// tool is versitygw as internal/gotool finds or builds it.
var tool = gotool.Tool{Name: "versitygw", Package: Package, Version: Version}

// InstallHint says what to do when versitygw can be neither found nor built: a missing
// service must fail the tests loudly, never skip them.
var InstallHint = tool.InstallHint()

// The root credentials of every test gateway.
const (
	AccessKey = "schooner-test"
	SecretKey = "schooner-test-secret"
)

// Gateway is a running versitygw with one bucket.
type Gateway struct {
	Endpoint string // http://127.0.0.1:port
	Bucket   string
	Dir      string // the posix backend's root; Dir/Bucket holds the objects as files
}

// Binary is the path of a versitygw to run: the one on PATH, else the one in
// $(go env GOPATH)/bin, else the copy built into CacheDir (building it the first time). A
// versitygw already installed is used whatever its version.
func Binary() (string, error) { return tool.Binary() }

// CacheDir is where Binary builds versitygw when none is installed.
func CacheDir() string { return tool.CacheDir() }

// Start runs a gateway for the test with a bucket named "ckpt" and stops it at cleanup. It
// fails the test if versitygw can be neither found nor built, or does not come up.
func Start(t testing.TB) *Gateway {
	t.Helper()
	g, stop, err := Launch(t.TempDir())
	if err != nil {
		t.Fatal(err.Error())
	}
	t.Cleanup(stop)
	return g
}

// Launch runs a gateway over root with a bucket named "ckpt", outside a test (the benchmarks);
// stop ends it.
func Launch(root string) (g *Gateway, stop func(), err error) {
	bin, err := Binary()
	if err != nil {
		return nil, nil, err
	}
	for range 3 { // the free port may be taken between choosing and binding it
		port, perr := netaddr.FreePort("127.0.0.1")
		if perr != nil {
			return nil, nil, fmt.Errorf("choosing a port for versitygw: %w", perr)
		}
		if g, stop, err = launch(bin, root, port); err == nil {
			return g, stop, nil
		}
	}
	return nil, nil, fmt.Errorf("starting versitygw: %w", err)
}

// launch starts versitygw on port, waits until it answers S3 requests and makes the bucket.
func launch(bin, root string, port int) (*Gateway, func(), error) {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	var logs syncbuf.Buffer // the gateway's output from two pipes
	cmd := exec.Command(bin, "--port", addr, "--access", AccessKey, "--secret", SecretKey,
		"--region", "us-east-1", "--quiet", "posix", root)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("running %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	g := &Gateway{Endpoint: "http://" + addr, Bucket: "ckpt", Dir: root}
	s, err := g.NewStore("")
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("making an s3 client: %w", err)
	}
	client := s.Client()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(g.Bucket)})
		cancel()
		if err == nil {
			break
		}
		select {
		case werr := <-exited:
			return nil, nil, fmt.Errorf("versitygw exited (%v): %s", werr, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, fmt.Errorf("versitygw at %s did not answer within 30s: %w; output: %s", addr, err, logs.String())
		}
		time.Sleep(20 * time.Millisecond) // polling for readiness, not waiting on an outcome
	}
	return g, stop, nil
}

// Client is an SDK client for the gateway, for setup and for poking at objects directly.
func (g *Gateway) Client(t testing.TB) *s3.Client {
	t.Helper()
	s, err := g.Store(t, "")
	if err != nil {
		t.Fatalf("making an s3 client: %v", err)
	}
	return s.Client()
}

// Store is an S3 store on the gateway's bucket under prefix with the smallest part size S3
// allows, so multipart paths run on objects of a few MiB.
func (g *Gateway) Store(t testing.TB, prefix string) (*store.S3, error) {
	t.Helper()
	return g.NewStore(prefix)
}

// NewStore is Store outside a test.
func (g *Gateway) NewStore(prefix string) (*store.S3, error) {
	return store.NewS3(context.Background(), store.S3Options{
		Bucket: g.Bucket, Prefix: prefix, Endpoint: g.Endpoint, Region: "us-east-1",
		AccessKeyID: AccessKey, SecretAccessKey: SecretKey, PartSize: store.MinPartSize,
	})
}

// URL is the s3:// URL of the bucket under prefix; credentials go in the environment.
func (g *Gateway) URL(prefix string) string {
	return "s3://" + g.Bucket + "/" + prefix + "?endpoint=" + g.Endpoint + "&part_size=5MiB"
}

// Env sets the AWS credential variables for the test so Open and the CLI find them.
func (g *Gateway) Env(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", SecretKey)
	t.Setenv("AWS_REGION", "us-east-1")
}
