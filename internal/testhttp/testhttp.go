// Package testhttp is how tests make one HTTP request to a server of theirs and read the
// whole answer.
package testhttp

import (
	"io"
	"net/http"
	"testing"
)

// Do sends a request of method to url with the header fields of header and returns the
// status code and the body; the test ends if the request cannot be sent.
func Do(t testing.TB, method, url string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
