package devserver_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/devserver"
)

// The UI learns its codec server from its settings, as the browser app asks for them: a
// payload sealed by --codec-key-file shows decoded in the UI of `schooner dev
// --codec-endpoint` to whoever can reach that codec server.
func TestTheUIOffersItsCodecEndpoint(t *testing.T) {
	port, err := devserver.FreePort("127.0.0.1")
	require.NoError(t, err)
	uiPort, err := devserver.FreePort("127.0.0.1")
	require.NoError(t, err)
	const endpoint = "http://127.0.0.1:8081"
	srv, err := devserver.Start(devserver.Options{Port: port, UIPort: uiPort, CodecEndpoint: endpoint})
	require.NoError(t, err)
	defer srv.Stop()

	resp, err := http.Get("http://" + srv.UIAddress() + "/api/v1/settings")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var settings struct {
		Codec struct{ Endpoint string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&settings))
	assert.Equal(t, endpoint, settings.Codec.Endpoint)
}
