// Command foundation measures how quickly a new user gets a working schooner: the cold build
// of the binary and the time from `schooner dev` to ready, each beside the same measurement
// of the Temporal CLI v1.5.1 dev server (which embeds the same kind of server and UI) in the
// same run, so the ratio is meaningful on any machine.
//
//	go run ./bench/foundation [-runs 5] [-cold-build]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/schooner-ml/schooner/bench/internal/machine"
)

func main() {
	runs := flag.Int("runs", 5, "start-to-ready measurements per server")
	coldBuild := flag.Bool("cold-build", false, "also time cold builds (empty build cache) of both binaries; takes minutes")
	flag.Parse()
	if err := run(*runs, *coldBuild); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(runs int, coldBuild bool) error {
	work, err := os.MkdirTemp("", "schooner-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	schooner := filepath.Join(work, "schooner")
	temporalBin := filepath.Join(work, "temporal")

	fmt.Printf("machine: %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), machine.CPUModel())
	if coldBuild {
		s, err := timedBuild(work, "schooner", "go", "build", "-o", schooner, "./cmd/schooner")
		if err != nil {
			return err
		}
		b, err := timedBuild(work, "temporal CLI v1.5.1", "go", "install", "github.com/temporalio/cli/cmd/temporal@v1.5.1")
		if err != nil {
			return err
		}
		fmt.Printf("cold build: schooner %.1fs, temporal CLI %.1fs, ratio %.2f\n", s.Seconds(), b.Seconds(), s.Seconds()/b.Seconds())
	} else {
		if out, err := exec.Command("go", "build", "-o", schooner, "./cmd/schooner").CombinedOutput(); err != nil {
			return fmt.Errorf("building schooner: %v\n%s", err, out)
		}
	}
	if out, err := exec.Command("go", "build", "-o", temporalBin, "github.com/temporalio/cli/cmd/temporal").CombinedOutput(); err != nil {
		// Not a dependency of this module: install it the documented way.
		cmd := exec.Command("go", "install", "github.com/temporalio/cli/cmd/temporal@v1.5.1")
		if out2, err2 := cmd.CombinedOutput(); err2 != nil {
			return fmt.Errorf("installing temporal CLI: %v\n%s\n%s", err2, out, out2)
		}
		gopath, _ := exec.Command("go", "env", "GOPATH").Output()
		temporalBin = filepath.Join(strings.TrimSpace(string(gopath)), "bin", "temporal")
	}

	var ours, theirs []time.Duration
	for i := 0; i < runs; i++ {
		d, err := timeToReady(work, func(grpc, ui int, dir string) *exec.Cmd {
			return exec.Command(schooner, "dev", "--port", strconv.Itoa(grpc), "--ui-port", strconv.Itoa(ui),
				"--data-dir", dir, "--metrics-addr", "", "--log-level", "warn")
		}, "is ready")
		if err != nil {
			return fmt.Errorf("schooner dev: %w", err)
		}
		ours = append(ours, d)
		d, err = timeToReady(work, func(grpc, ui int, dir string) *exec.Cmd {
			return exec.Command(temporalBin, "server", "start-dev", "--port", strconv.Itoa(grpc), "--ui-port", strconv.Itoa(ui),
				"--db-filename", filepath.Join(dir, "t.db"), "--log-level", "warn")
		}, "")
		if err != nil {
			return fmt.Errorf("temporal server start-dev: %w", err)
		}
		theirs = append(theirs, d)
	}
	mo, mt := median(ours), median(theirs)
	fmt.Printf("start to ready (gRPC + UI answering, fresh data dir), median of %d:\n", runs)
	fmt.Printf("  schooner dev (server + UI + search attributes + control worker + node agent): %.2fs\n", mo.Seconds())
	fmt.Printf("  temporal server start-dev v1.5.1 (server + UI only):                          %.2fs\n", mt.Seconds())
	fmt.Printf("  ratio schooner/temporal: %.2f\n", mo.Seconds()/mt.Seconds())
	return nil
}

func timedBuild(work, what string, args ...string) (time.Duration, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "GOCACHE="+filepath.Join(work, "gocache-"+strings.ReplaceAll(what, " ", "_")), "GOBIN="+work)
	began := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("building %s: %v\n%s", what, err, out)
	}
	return time.Since(began), nil
}

// timeToReady starts a server on fresh ports and data directory and returns how long it took
// until the gRPC port accepted a connection, the UI answered 200 and, when marker is set,
// the process printed it.
func timeToReady(work string, mk func(grpc, ui int, dir string) *exec.Cmd, marker string) (time.Duration, error) {
	grpc, ui := freePort(), freePort()
	dir, err := os.MkdirTemp(work, "data-")
	if err != nil {
		return 0, err
	}
	cmd := mk(grpc, ui, dir)
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = nil
	sawMarker := make(chan struct{})
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
		}
	}()
	go func() {
		sc := bufio.NewScanner(stdout)
		closed := false
		for sc.Scan() {
			if marker != "" && !closed && strings.Contains(sc.Text(), marker) {
				close(sawMarker)
				closed = true
			}
		}
	}()
	if marker == "" {
		close(sawMarker)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("not ready within 60s")
		}
		if dialable(grpc) && uiAnswers(ui) {
			select {
			case <-sawMarker:
				return time.Since(began), nil
			default:
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func dialable(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 100*time.Millisecond)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

func uiAnswers(port int) bool {
	cl := http.Client{Timeout: 500 * time.Millisecond}
	resp, err := cl.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/")
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
