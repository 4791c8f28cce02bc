package gceapi

import (
	"encoding/base64"
	"net/http"
	"strconv"
)

// maxPage is GCE's largest and default maxResults.
const maxPage = 500

// pageParams reads maxResults and pageToken. The token is the key of the last item of the
// previous page, so pages stay consistent while items come and go between calls.
func pageParams(r *http.Request) (size int, after string, err error) {
	size = maxPage
	if s := r.URL.Query().Get("maxResults"); s != "" {
		n, perr := strconv.Atoi(s)
		if perr != nil || n < 0 {
			return 0, "", apiInvalid("Invalid value for field 'maxResults': '" + s + "'. Must be a non-negative integer.")
		}
		if n > 0 && n < maxPage {
			size = n
		}
	}
	if tok := r.URL.Query().Get("pageToken"); tok != "" {
		b, derr := base64.RawURLEncoding.DecodeString(tok)
		if derr != nil {
			return 0, "", apiInvalid("Invalid value for field 'pageToken': '" + tok + "'.")
		}
		after = string(b)
	}
	return size, after, nil
}

// listParams reads what every list call takes: the filter, maxResults and pageToken. A
// malformed one is the 400 GCE answers.
func listParams(r *http.Request) (f filter, size int, after string, err error) {
	if f, err = parseFilter(r.URL.Query().Get("filter")); err != nil {
		return f, 0, "", apiInvalid("Invalid value for field 'filter': " + err.Error())
	}
	size, after, err = pageParams(r)
	return f, size, after, err
}

// paginate returns the page of items (sorted by key) after the key `after`, and the token
// for the next page ("" on the last page).
func paginate[T any](items []T, key func(T) string, size int, after string) ([]T, string) {
	start := 0
	if after != "" {
		for start < len(items) && key(items[start]) <= after {
			start++
		}
	}
	end := start + size
	if end >= len(items) {
		return items[start:], ""
	}
	return items[start:end], base64.RawURLEncoding.EncodeToString([]byte(key(items[end-1])))
}
