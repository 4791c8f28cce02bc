package stage

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/schooner-ml/schooner/internal/frame"
)

// The fake inference worker is this test binary run again with $FAKE_WORKER naming its mode:
//
//	serve     listens on --listen, answers the node role (hello_ok, pong, peers_ok; every
//	          peers op is appended to $FAKE_DIR/peers.jsonl), exits 0 on SIGTERM; a "crash"
//	          op on any connection makes it print to stderr and exit 3
//	stubborn  serve, but ignores SIGTERM
//	legacy    serve, but refuses the node role, as a worker without it does
//	nolisten  prints an import error and exits 1 at once
//
// Its arguments are written to $FAKE_DIR/args.json.
const (
	envFakeMode = "FAKE_WORKER"
	envFakeDir  = "FAKE_DIR"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envFakeMode); mode != "" {
		os.Exit(fakeWorker(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeCommand is a Supervisor.Command running the fake worker in mode, its files in dir.
func fakeCommand(mode, dir string) func([]string) (*exec.Cmd, error) {
	return func(args []string) (*exec.Cmd, error) {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), envFakeMode+"="+mode, envFakeDir+"="+dir)
		return cmd, nil
	}
}

func fakeWorker(mode string, args []string) int {
	dir := os.Getenv(envFakeDir)
	b, _ := json.Marshal(args)
	_ = os.WriteFile(filepath.Join(dir, "args.json"), b, 0o644)
	if mode == "nolisten" {
		fmt.Fprintln(os.Stderr, "ModuleNotFoundError: No module named 'torch'")
		return 1
	}
	listen := ""
	for i, a := range args {
		if a == "--listen" && i+1 < len(args) {
			listen = args[i+1]
		}
	}
	sigs := make(chan os.Signal, 1)
	if mode == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(sigs, syscall.SIGTERM)
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		return 2
	}
	fmt.Fprintf(os.Stderr, "fake worker listening on %s\n", listen)
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go fakeConn(c, mode, dir, &mu)
		}
	}()
	<-sigs
	fmt.Fprintln(os.Stderr, "fake worker: SIGTERM")
	return 0
}

func fakeConn(c net.Conn, mode, dir string, mu *sync.Mutex) {
	defer c.Close()
	r := frame.NewReader(c, 1<<20)
	for {
		h, _, err := r.Next()
		if err != nil {
			return
		}
		switch h.Op {
		case "hello":
			var hello frame.Hello
			_ = h.Decode(&hello)
			if hello.Role == RoleNode && mode == "legacy" {
				_ = frame.Write(c, frame.NewError("bad_request", "role node is not one of router, stage, sampler"), nil)
				return
			}
			_ = frame.Write(c, map[string]any{"op": "hello_ok", "version": 1}, nil)
		case "ping":
			_ = frame.Write(c, map[string]any{"op": "pong", "load": Load{Running: 1, Waiting: 2, KVBlocksFree: 3}}, nil)
		case "peers":
			mu.Lock()
			f, err := os.OpenFile(filepath.Join(dir, "peers.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				_, _ = f.Write(append(append([]byte(nil), h.Raw...), '\n'))
				_ = f.Close()
			}
			mu.Unlock()
			_ = frame.Write(c, map[string]any{"op": "peers_ok"}, nil)
		case "crash":
			fmt.Fprintln(os.Stderr, "Traceback: boom: CUDA out of memory")
			os.Exit(3)
		default:
			_ = frame.Write(c, frame.NewError("bad_request", "unknown op %q", h.Op), nil)
			return
		}
	}
}
