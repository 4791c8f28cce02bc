// Package e2e runs the serving data path end to end: a real KV-cache holder (package kvcache,
// in process), Python stage workers (trainer/python/schooner_serve, as subprocesses) and the
// router (package serving/router) behind an httptest server, driven with the official OpenAI Go
// client. It needs a python3 with torch (Debian python3-torch); without one the tests skip.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/kvcache"
	"github.com/schooner-ml/schooner/serving/router"
	"github.com/schooner-ml/schooner/serving/router/routertest"
)

const (
	modelID   = "schooner/tiny"
	modelSeed = "7"
	vocab     = 260
	eos       = 257
)

// repoRoot is the module root: this file is serving/e2e/helpers_test.go.
func repoRoot(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

var (
	pythonOnce sync.Once
	pythonPath string
	pythonWhy  string
)

// python is a python3 that imports torch, or the test skips.
func python(t testing.TB) string {
	t.Helper()
	pythonOnce.Do(func() {
		cands := []string{"/usr/bin/python3"}
		if p, err := exec.LookPath("python3"); err == nil {
			cands = append(cands, p)
		}
		for _, c := range cands {
			if exec.Command(c, "-c", "import torch").Run() == nil {
				pythonPath = c
				return
			}
		}
		pythonWhy = "needs python3 with torch (Debian python3-torch)"
	})
	if pythonPath == "" {
		t.Skip(pythonWhy)
	}
	return pythonPath
}

// deadline polls cond every few milliseconds until it holds or d passes.
func deadline(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// startHolder runs a kvcache holder in process on loopback TCP.
func startHolder(t testing.TB) (*kvcache.Holder, string) {
	t.Helper()
	h, err := kvcache.New(kvcache.Options{Budget: 1 << 30})
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = h.Serve(l) }()
	t.Cleanup(func() { _ = h.Close() })
	return h, l.Addr().String()
}

// worker is one stage process.
type worker struct {
	addr string
	cmd  *exec.Cmd
	log  *bytes.Buffer
	mu   *sync.Mutex
	done chan struct{}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// startWorker starts `python3 -m schooner_serve.worker` listening on addr and waits until it
// accepts connections.
func startWorker(t testing.TB, addr string, args ...string) *worker {
	t.Helper()
	py := python(t)
	all := append([]string{"-m", "schooner_serve.worker", "--model", "tiny", "--seed", modelSeed, "--listen", addr,
		"--connect-timeout", "20"}, args...)
	cmd := exec.Command(py, all...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(repoRoot(t), "trainer", "python"), "SCHOONER_SERVE_THREADS=1")
	w := &worker{addr: addr, cmd: cmd, log: &bytes.Buffer{}, mu: &sync.Mutex{}, done: make(chan struct{})}
	cmd.Stdout = lockedWriter{w.mu, w.log}
	cmd.Stderr = lockedWriter{w.mu, w.log}
	require.NoError(t, cmd.Start())
	go func() { _ = cmd.Wait(); close(w.done) }()
	t.Cleanup(func() {
		w.kill()
		if t.Failed() {
			t.Logf("worker %s %v:\n%s", addr, args, w.output())
		}
	})
	deadline(t, 20*time.Second, "worker "+addr+" to listen", func() bool {
		select {
		case <-w.done:
			t.Fatalf("worker %s exited: %s", addr, w.output())
		default:
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
	return w
}

func (w *worker) output() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.log.String()
}

// kill is kill -9, and waits for the process to be gone.
func (w *worker) kill() {
	_ = w.cmd.Process.Kill()
	<-w.done
}

// idTokens is the test's tokenizer: a token is written as its id and a space, so a
// completion's text names its token ids exactly (the byte tokenizer maps ids over 255, like
// <eos>, to U+FFFD).
type idTokens struct{}

func (idTokens) Encode(text string) []int {
	var out []int
	for _, f := range strings.Fields(text) {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

func (idTokens) Decode(dst []byte, tokens []int) []byte {
	for _, t := range tokens {
		dst = strconv.AppendInt(dst, int64(t), 10)
		dst = append(dst, ' ')
	}
	return dst
}

func ids(text string) []int { return idTokens{}.Encode(text) }

// front is a router behind an httptest server with an OpenAI client.
type front struct {
	r      *router.Router
	client openai.Client
}

func startRouter(t testing.TB, opts router.Options, stages ...*worker) *front {
	t.Helper()
	opts.Model = modelID
	opts.Deployment = "default"
	opts.Tokenizer = idTokens{}
	opts.VocabSize = vocab
	if opts.ReconnectBackoff == 0 {
		opts.ReconnectBackoff = 20 * time.Millisecond
	}
	r, err := router.New(opts)
	require.NoError(t, err)
	_, client := routertest.Serve(t, r)
	var addrs []router.StageAddr
	for _, w := range stages {
		addrs = append(addrs, router.StageAddr{Addr: w.addr})
	}
	r.SetStages(addrs)
	return &front{r: r, client: client}
}

// req is one completion of the tests.
type req struct {
	Prompt      []int   `json:"prompt"`
	MaxTokens   int     `json:"max_tokens"`
	Temperature float64 `json:"temperature"`
	Seed        int64   `json:"seed"`
}

func (q req) params() openai.CompletionNewParams {
	p := make([]int64, len(q.Prompt))
	for i, t := range q.Prompt {
		p[i] = int64(t)
	}
	return openai.CompletionNewParams{
		Model:       modelID,
		Prompt:      openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: p},
		MaxTokens:   openai.Int(int64(q.MaxTokens)),
		Temperature: openai.Float(q.Temperature),
		Seed:        openai.Int(q.Seed),
	}
}

const referenceScript = `
import json, sys
from schooner_serve.config import CONFIGS
from schooner_serve.engine import StageEngine, generate
c = CONFIGS["tiny"]
e = StageEngine(c, int(sys.argv[1]), 0, c.layers, kv_blocks=512)
out = [generate(e, "ref%d" % i, q["prompt"], q["max_tokens"], q["temperature"], q["seed"], stop=[int(sys.argv[2])])
       for i, q in enumerate(json.load(sys.stdin))]
json.dump(out, sys.stdout)
`

// reference runs the requests one by one through a whole-model engine of the same worker code
// (the failure-free reference): their tokens, up to and including <eos>.
func reference(t testing.TB, qs ...req) [][]int {
	t.Helper()
	in, err := json.Marshal(qs)
	require.NoError(t, err)
	cmd := exec.Command(python(t), "-c", referenceScript, modelSeed, strconv.Itoa(eos))
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(repoRoot(t), "trainer", "python"), "SCHOONER_SERVE_THREADS=1")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var toks [][]int
	require.NoError(t, json.Unmarshal(out, &toks))
	return toks
}

func finishOf(toks []int, maxTokens int) string {
	if len(toks) > 0 && toks[len(toks)-1] == eos && len(toks) <= maxTokens {
		return "stop"
	}
	return "length"
}

// complete runs a non-streaming completion: its tokens and finish reason.
func (f *front) complete(t testing.TB, q req) ([]int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := f.client.Completions.New(ctx, q.params())
	require.NoError(t, err)
	require.Len(t, res.Choices, 1)
	toks := ids(res.Choices[0].Text)
	require.EqualValues(t, len(toks), res.Usage.CompletionTokens)
	return toks, string(res.Choices[0].FinishReason)
}

// stream is a streaming completion read token by token.
type stream struct {
	s interface {
		Next() bool
		Current() openai.Completion
		Err() error
		Close() error
	}
	toks   []int
	finish string
}

func (f *front) stream(t testing.TB, q req) *stream {
	t.Helper()
	return &stream{s: f.client.Completions.NewStreaming(context.Background(), q.params())}
}

// read consumes chunks until n tokens arrived (n < 0: to the end).
func (s *stream) read(t testing.TB, n int) {
	t.Helper()
	for n < 0 || len(s.toks) < n {
		if !s.s.Next() {
			require.NoError(t, s.s.Err())
			require.NotEmpty(t, s.finish, "the stream ended without a finish reason")
			return
		}
		c := s.s.Current()
		for _, ch := range c.Choices {
			s.toks = append(s.toks, ids(ch.Text)...)
			if ch.FinishReason != "" {
				s.finish = string(ch.FinishReason)
			}
		}
	}
}

func (s *stream) String() string { return fmt.Sprint(s.toks) }
