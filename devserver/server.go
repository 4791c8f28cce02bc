// Package devserver runs a real Temporal server (SQLite persistence, or PostgreSQL with
// Options.Database) and the Temporal UI inside the schooner process. It is what makes
// `schooner dev` and `schooner demo` work on a laptop with no other install. It is deliberately the only package besides cmd and the
// integration tests that links the server, so unit tests of everything else build fast.
package devserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	uiserver "github.com/temporalio/ui-server/v2/server"
	"go.temporal.io/server/temporal"
)

// Options configures the embedded server. Zero values pick sensible defaults.
type Options struct {
	// IP to bind (default 127.0.0.1); a loopback address only (see checkLoopback).
	IP string
	// Port is the frontend gRPC port (default 7233).
	Port int
	// UIPort is the Temporal UI port; 0 with Headless false means 8233.
	UIPort   int
	Headless bool
	// CodecEndpoint is the codec server the UI decodes payloads with by default (schooner
	// codec serve; each person may still set their own in the UI's Codec Server setting).
	CodecEndpoint string
	// DataDir keeps the SQLite database; empty means in memory (tests).
	DataDir string
	// Database is where the server keeps its state: empty or "sqlite" for SQLite (see
	// DataDir), or postgres://user:password@host:port/dbname?sslmode=… for PostgreSQL, where
	// dbname (default temporal) and dbname_visibility are created if missing and their
	// schemas set up or updated by Temporal's schema tool at every start.
	Database  string
	Namespace string
	Logger    zerolog.Logger
	// ServerLogLevel filters the server's own, rather chatty, logs: a zerolog level name
	// (default warn).
	ServerLogLevel string
	// TaskQueueIdle is how long a task queue nobody polls stays loaded in the matching
	// service (DefaultTaskQueueIdle when zero). Every simulated instance has a node queue of
	// its own that nobody polls once the instance is gone.
	TaskQueueIdle time.Duration
	// TaskWorkers is how many goroutines execute each of the history service's task queues
	// (transfer, timer, visibility; DefaultTaskWorkers when zero). Temporal's default, 512 a
	// queue, is for a host with hundreds of shards; this server has one.
	TaskWorkers int
}

// Server is a running embedded Temporal server and UI.
type Server struct {
	temporal temporal.Server
	ui       *uiserver.Server
	opts     Options
	storage  string
	stopOnce sync.Once
}

// DatabaseFile is where the SQLite database lives under dataDir.
func DatabaseFile(dataDir string) string { return filepath.Join(dataDir, "temporal.db") }

func (o *Options) defaults() {
	if o.IP == "" {
		o.IP = "127.0.0.1"
	}
	if o.Port == 0 {
		o.Port = 7233
	}
	if o.UIPort == 0 && !o.Headless {
		o.UIPort = 8233
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.ServerLogLevel == "" {
		o.ServerLogLevel = "warn"
	}
	if o.TaskQueueIdle <= 0 {
		o.TaskQueueIdle = DefaultTaskQueueIdle
	}
	if o.TaskWorkers <= 0 {
		o.TaskWorkers = DefaultTaskWorkers
	}
}

// Start checks the ports, prepares the database and starts the server and the UI. It
// returns once the frontend accepts gRPC connections.
func Start(opts Options) (*Server, error) {
	opts.defaults()
	pg, err := parseDatabase(opts.Database)
	if err != nil {
		return nil, err
	}
	if err := checkLoopback(opts.IP); err != nil {
		return nil, err
	}
	if err := checkFree(opts.IP, opts.Port, "Temporal gRPC", "--port"); err != nil {
		return nil, err
	}
	if !opts.Headless {
		if err := checkFree(opts.IP, opts.UIPort, "Temporal UI", "--ui-port"); err != nil {
			return nil, err
		}
	}
	dbFile := ""
	if opts.DataDir != "" && pg == nil {
		if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("creating data directory: %w", err)
		}
		dbFile = DatabaseFile(opts.DataDir)
	}
	level, err := zerolog.ParseLevel(opts.ServerLogLevel)
	if err != nil {
		return nil, fmt.Errorf("invalid server log level %q: %w", opts.ServerLogLevel, err)
	}
	logger := serverLogger{zl: opts.Logger.With().Str("component", "temporal-server").Logger().Level(level)}
	newStores, storage, err := chooseStores(opts, pg, dbFile, logger)
	if err != nil {
		return nil, err
	}
	// The server's internal ports (HTTP API, history, matching, worker) are picked free and
	// bound a moment later; another process may take one in between. Such a start is tried
	// again with other ports (the user's own ports were checked above and are not retried).
	var srv temporal.Server
	for attempt := 1; ; attempt++ {
		srv, err = newTemporalServer(opts, newStores, logger)
		if err == nil || attempt == internalPortAttempts || !isInternalPortRace(err, opts) {
			break
		}
		opts.Logger.Warn().Err(err).Int("attempt", attempt).Msg("an internal port of the embedded server was taken meanwhile; trying other ports")
	}
	if err != nil {
		return nil, err
	}
	s := &Server{temporal: srv, opts: opts, storage: storage}
	if !opts.Headless {
		s.ui = newUI(opts)
		uiErr := make(chan error, 1)
		go func() { uiErr <- s.ui.Start() }()
		if err := waitListening(s.UIAddress(), uiErr); err != nil {
			s.Stop()
			return nil, fmt.Errorf("starting Temporal UI: %w", err)
		}
	}
	return s, nil
}

// Address is the frontend gRPC address clients dial.
func (s *Server) Address() string {
	return net.JoinHostPort(s.opts.IP, strconv.Itoa(s.opts.Port))
}

// UIAddress is the host:port of the UI, or "" when headless.
func (s *Server) UIAddress() string {
	if s.opts.Headless {
		return ""
	}
	return net.JoinHostPort(s.opts.IP, strconv.Itoa(s.opts.UIPort))
}

// Storage says where the server keeps its state, for people: the SQLite file, or the
// PostgreSQL URL with its password hidden.
func (s *Server) Storage() string { return s.storage }

// Namespace is the namespace the server was prepared with.
func (s *Server) Namespace() string { return s.opts.Namespace }

// Stop shuts the UI and the server down; it is safe to call more than once.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if s.ui != nil {
			s.ui.Stop()
		}
		if err := s.temporal.Stop(); err != nil && !errors.Is(err, net.ErrClosed) {
			s.opts.Logger.Warn().Err(err).Msg("stopping Temporal server")
		}
	})
}

// internalPortAttempts bounds the retries of a start that lost an internal port to a race.
const internalPortAttempts = 4

// newTemporalServer builds and starts the server on freshly picked internal ports.
func newTemporalServer(opts Options, newStores func() (stores, error), logger serverLogger) (temporal.Server, error) {
	taken := map[int]bool{opts.Port: true, opts.UIPort: true}
	httpPort, err := FreePortExcept(opts.IP, taken)
	if err != nil {
		return nil, err
	}
	st, err := newStores()
	if err != nil {
		return nil, err
	}
	cfg, hosts, err := buildConfig(opts, httpPort, st, taken)
	if err != nil {
		return nil, err
	}
	srv, err := temporal.NewServer(serverOptions(cfg, hosts, logger, opts, httpPort)...)
	if err != nil {
		return nil, fmt.Errorf("building Temporal server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("starting Temporal server: %w", err)
	}
	return srv, nil
}

// isInternalPortRace is a failed start whose cause is a port in use that is not one the user
// chose (the frontend's gRPC port or the UI's).
func isInternalPortRace(err error, opts Options) bool {
	msg := err.Error()
	if !strings.Contains(msg, "address already in use") {
		return false
	}
	for _, p := range []int{opts.Port, opts.UIPort} {
		if p != 0 && strings.Contains(msg, net.JoinHostPort(opts.IP, strconv.Itoa(p))+": bind") {
			return false
		}
	}
	return true
}
