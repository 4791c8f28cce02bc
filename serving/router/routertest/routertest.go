// Package routertest serves a router over HTTP for tests and talks to it the way users do,
// through the official OpenAI Go client.
package routertest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
)

// Handler is what Serve serves: a router.Router or a router.Pool.
type Handler interface {
	http.Handler
	Close() error
}

// Serve serves h over an HTTP test server until the test ends, then closes the server's
// connections, the server and h. It returns the server and an OpenAI client of its /v1/ API
// that never retries.
func Serve(t testing.TB, h Handler) (*httptest.Server, openai.Client) {
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		_ = h.Close()
	})
	return srv, openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
}
