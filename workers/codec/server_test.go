package codec

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

// The SDK's remote codec speaks the protocol the UI and the temporal CLI speak.
func TestTheCodecServerDecodesWhatWorkersSealed(t *testing.T) {
	keys := keyring(t, newKey(t, "k1"))
	srv := httptest.NewServer(Handler(keys, ServerOptions{Token: "t0ken"}))
	defer srv.Close()
	sealed, err := (&Codec{Keys: keys}).Encode([]*commonpb.Payload{{Data: []byte(`"plan"`)}})
	require.NoError(t, err)

	remote := converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{Endpoint: srv.URL + "/codec",
		ModifyRequest: func(r *http.Request) error { r.Header.Set("Authorization", "Bearer t0ken"); return nil }})
	opened, err := remote.Decode(sealed)
	require.NoError(t, err)
	assert.Equal(t, `"plan"`, string(opened[0].Data))

	anonymous := converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{Endpoint: srv.URL})
	_, err = anonymous.Decode(sealed)
	assert.ErrorContains(t, err, "a bearer token is required")
}

func TestTheCodecServerAnswersOnlyTheUIsOriginsPreflight(t *testing.T) {
	h := Handler(keyring(t, newKey(t, "k1")), ServerOptions{Origins: []string{"http://localhost:8233"}})
	for origin, allowed := range map[string]bool{"http://localhost:8233": true, "https://evil.example": false} {
		req := httptest.NewRequestWithContext(context.Background(), http.MethodOptions, "/decode", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusOK, rec.Code)
		if allowed {
			assert.Equal(t, origin, rec.Header().Get("Access-Control-Allow-Origin"))
			assert.Contains(t, rec.Header().Get("Access-Control-Allow-Headers"), "X-Namespace")
		} else {
			assert.Empty(t, rec.Header().Get("Access-Control-Allow-Origin"), origin)
		}
	}
	get := httptest.NewRecorder()
	h.ServeHTTP(get, httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/decode", strings.NewReader("")))
	assert.Equal(t, http.StatusMethodNotAllowed, get.Code)
}
