package workers

import (
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/schooner-ml/schooner/workers/codec"
	"github.com/schooner-ml/schooner/workers/wfclient"
)

func TestACodecKeyFileSealsTheClientsPayloads(t *testing.T) {
	secret := make([]byte, codec.KeySize)
	_, err := rand.Read(secret)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(path, []byte("k1 "+base64.StdEncoding.EncodeToString(secret)+"\n"), 0o600))

	opts, err := ClientConfig{CodecKeyFile: path}.Options(nil, nil)
	require.NoError(t, err)
	require.NotNil(t, opts.DataConverter)
	p, err := opts.DataConverter.ToPayload("s3://bucket/job")
	require.NoError(t, err)
	assert.Equal(t, codec.Encoding, string(p.Metadata[converter.MetadataEncoding]))
	assert.NotContains(t, string(p.Data), "bucket")

	// Code that decodes payloads outside the SDK's calls (memos, heartbeat details) finds the
	// client's converter.
	lazy, err := client.NewLazyClient(opts)
	require.NoError(t, err)
	defer lazy.Close()
	var s string
	assert.Error(t, wfclient.ConverterOf(lazy).FromPayload(p, &s), "the default converter cannot open it")
	wfclient.RememberConverter(lazy, opts.DataConverter)
	require.NoError(t, wfclient.ConverterOf(lazy).FromPayload(p, &s))
	assert.Equal(t, "s3://bucket/job", s)

	require.NoError(t, os.Chmod(path, 0o644))
	_, err = ClientConfig{CodecKeyFile: path}.Options(nil, nil)
	assert.ErrorContains(t, err, "chmod 600")
}
