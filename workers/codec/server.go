package codec

import (
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"

	"go.temporal.io/sdk/converter"
)

// ServerOptions configure the codec server.
type ServerOptions struct {
	// Origins are the web origins (scheme://host:port) of Temporal UIs allowed to call the
	// server from a browser, e.g. http://localhost:8233; other origins get no CORS headers,
	// so a page elsewhere cannot use a person's browser to decrypt histories.
	Origins []string
	// Token, when set, must come as "Authorization: Bearer <token>" on every encode and
	// decode request.
	Token string
}

// Handler serves /encode and /decode (under any prefix) as the Temporal UI's codec endpoint
// and the temporal CLI's --codec-endpoint expect: a JSON Payloads message in, the same out.
func Handler(keys *Keyring, o ServerOptions) http.Handler {
	inner := converter.NewPayloadCodecHTTPHandler(&Codec{Keys: keys})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && slices.Contains(o.Origins, origin) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
			h.Add("Vary", "Origin")
		}
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusOK)
			return
		}
		if r.Method != http.MethodPost {
			http.Error(w, "POST a JSON Payloads message to .../encode or .../decode", http.StatusMethodNotAllowed)
			return
		}
		if o.Token != "" && !bearerMatches(r.Header.Get("Authorization"), o.Token) {
			http.Error(w, "a bearer token is required", http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	})
}

func bearerMatches(header, token string) bool {
	got, ok := strings.CutPrefix(header, "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}
