package gceapi

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Server runs a Handler on its own listener, for tests and for `schooner dev`, which point
// the compute clients at URL() and each VM's metadata watcher at MetadataURL(name).
type Server struct {
	*Handler
	ln  net.Listener
	srv *http.Server
}

// NewServer returns a Server over b; it serves nothing until Start.
func NewServer(b Backend, opts Options) *Server {
	return &Server{Handler: New(b, opts)}
}

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves in the background.
func (s *Server) Start(addr string) error {
	if s.ln != nil {
		return errors.New("gceapi: server already started")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.ln = ln
	s.srv = &http.Server{Handler: s.Handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return nil
}

// Addr is the address the server listens on (host:port), or "" before Start.
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// URL is the endpoint to give the compute clients (option.WithEndpoint).
func (s *Server) URL() string { return "http://" + s.Addr() }

// MetadataURL is the base that stands in for http://169.254.169.254 on VM name: requests
// for <base>/computeMetadata/v1/<key> answer for that VM.
func (s *Server) MetadataURL(name string) string {
	return s.URL() + "/vm/" + url.PathEscape(name)
}

// Close stops the server at once, dropping requests in flight and open connections. A
// graceful shutdown would wait for connections the clients opened but never used, which
// net/http counts as busy for seconds; a simulator has nothing to drain.
func (s *Server) Close() error {
	if s.srv == nil {
		return nil
	}
	return s.srv.Close()
}
