package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/cloud/aws"
	"github.com/schooner-ml/schooner/workers"
	"github.com/schooner-ml/schooner/workers/trainingclient"
)

// Market settings every process agrees on: simulated seconds per wall second, the market's
// seed, where in the bundled traces it starts (a stretch where spot capacity falls while the
// jobs run, so the market preempts machines too and the node agents hear the notices from
// the market's IMDS face), and the regions of the zones the jobs may use (fewer regions,
// fewer EC2 calls).
const (
	timeScale        = 120
	marketSeed       = 3
	marketTraceStart = "6h50m"
)

var regions = []string{"us-east-2", "us-west-2"}

// cluster is schooner run as separate processes of one built binary: the simulated market
// (`schooner dev --only market`), the Temporal server on PostgreSQL (`schooner dev --only
// server`), control workers (`schooner worker control --cloud sim`) and one node agent per
// simulated instance (`schooner worker node`, started and killed by nodeAgents).
type cluster struct {
	t   *testing.T
	bin string
	dir string

	temporal string // host:port of the Temporal server
	ec2, gce string // host:port of the market's faces

	market, server *proc
	controls       []*proc

	mu    sync.Mutex
	procs []*proc // every process ever started, for the logs of a failure

	client client.Client
	jobs   *trainingclient.Client
	cloud  *aws.Provider
}

// buildBinary builds cmd/schooner once into dir; it is the binary every process runs.
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "schooner")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/schooner")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building schooner: %v\n%s", err, out)
	}
	return bin
}

// newCluster starts the market, the server on the PostgreSQL at dbURL and n control workers,
// and connects a client. Every process stops when the test ends; a failed test prints the end
// of every process's log.
func newCluster(t *testing.T, bin, dbURL string, controls int) *cluster {
	t.Helper()
	c := &cluster{t: t, bin: bin, dir: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(c.dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	c.temporal, c.ec2, c.gce = freeAddr(t), freeAddr(t), freeAddr(t)
	t.Cleanup(c.stopAll)
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpLogs()
		}
	})

	c.market = c.newProc("market", "dev", "--only", "market", "--log-level", "warn", "--trace-start", marketTraceStart,
		"--sim-seed", strconv.Itoa(marketSeed), "--time-scale", strconv.Itoa(timeScale),
		"--sim-ec2-addr", c.ec2, "--sim-gce-addr", c.gce)
	c.mustStart(c.market, "is ready", 30*time.Second)

	host, port, _ := net.SplitHostPort(c.temporal)
	c.server = c.newProc("server", "dev", "--only", "server", "--log-level", "warn", "--headless",
		"--ip", host, "--port", port, "--data-dir", filepath.Join(c.dir, "server"))
	// The URL goes through the environment, as docs/operations.md advises: off the command line.
	c.server.env = []string{"SCHOONER_DB=" + dbURL}
	c.mustStart(c.server, "is ready", 90*time.Second)

	events := c.market.field("EC2 events")
	if events == "" {
		t.Fatal("the market did not print its SQS queue's URL")
	}
	for i := range controls {
		p := c.newProc(fmt.Sprintf("control-%d", i+1), "worker", "control", "--address", c.temporal,
			"--cloud", "sim", "--sim-ec2", c.ec2, "--sim-gce", c.gce, "--sim-time-scale", strconv.Itoa(timeScale),
			"--aws-region", strings.Join(regions, ","),
			// EC2's interruption events through the face's SQS queue, as on AWS: each
			// preemption reaches one of the control workers, which signals the job.
			"--aws-endpoint", "http://"+c.ec2, "--aws-events-queue", events,
			"--store-root", c.dir)
		c.mustStart(p, "control worker running", 30*time.Second)
		c.controls = append(c.controls, p)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	c.client, err = workers.Dial(ctx, workers.ClientConfig{Address: c.temporal}, workers.NewTemporalLogger(zerolog.Nop()), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.client.Close)
	c.jobs = trainingclient.New(c.client)
	c.cloud, err = aws.New(ctx, aws.Options{Regions: regions, Endpoint: "http://" + c.ec2})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newProc names a process of the binary; it is not started.
func (c *cluster) newProc(name string, args ...string) *proc {
	p := &proc{name: name, bin: c.bin, args: args, log: filepath.Join(c.dir, "logs", name+".log")}
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p
}

// mustStart starts p and waits until its log says ready.
func (c *cluster) mustStart(p *proc, ready string, within time.Duration) {
	c.t.Helper()
	if err := c.restart(p, ready, within); err != nil {
		c.t.Fatal(err)
	}
}

// restart starts p (again) and waits until its log says ready.
func (c *cluster) restart(p *proc, ready string, within time.Duration) error {
	if err := p.start(); err != nil {
		return err
	}
	return p.waitFor(ready, within)
}

// unexpectedExits lists the processes that ended on their own.
func (c *cluster) unexpectedExits() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, p := range c.procs {
		if why := p.unexpectedExit(); why != "" {
			out = append(out, why)
		}
	}
	return out
}

// stopAll stops every process still running: node agents and control workers first, then the
// server, then the market.
func (c *cluster) stopAll() {
	c.mu.Lock()
	procs := append([]*proc(nil), c.procs...)
	c.mu.Unlock()
	var wg sync.WaitGroup
	for i := len(procs) - 1; i >= 0; i-- {
		if p := procs[i]; p != c.server && p != c.market {
			wg.Add(1)
			go func() { defer wg.Done(); p.stop() }()
		}
	}
	wg.Wait()
	c.server.stop()
	c.market.stop()
}

// logLines counts the lines containing text in the logs of the processes whose names start
// with prefix.
func (c *cluster) logLines(prefix, text string) int {
	n := 0
	for _, p := range c.procs {
		if !strings.HasPrefix(p.name, prefix) {
			continue
		}
		b, err := os.ReadFile(p.log)
		if err == nil {
			n += strings.Count(string(b), text)
		}
	}
	return n
}

// dumpLogs prints the end of every process's log and where the full logs are.
func (c *cluster) dumpLogs() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		c.t.Logf("----- %s (%s), last lines:\n%s", p.name, p.log, p.tail(40))
	}
}

// freeAddr is a loopback host:port nobody listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
