package codec

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

func newKey(t *testing.T, id string) Key {
	t.Helper()
	k := Key{ID: id, Secret: make([]byte, KeySize)}
	_, err := rand.Read(k.Secret)
	require.NoError(t, err)
	return k
}

func keyring(t *testing.T, keys ...Key) *Keyring {
	t.Helper()
	r, err := NewKeyring(keys...)
	require.NoError(t, err)
	return r
}

func TestSealedPayloadsHideTheirDataAndOpenWithTheKey(t *testing.T) {
	dc := DataConverter(nil, keyring(t, newKey(t, "k1")))
	p, err := dc.ToPayload(map[string]string{"store": "s3://secret-bucket/jobs"})
	require.NoError(t, err)
	assert.Equal(t, Encoding, string(p.Metadata[converter.MetadataEncoding]))
	assert.Equal(t, "k1", string(p.Metadata[MetaKeyID]))
	assert.NotContains(t, string(p.Data), "secret-bucket")
	var back map[string]string
	require.NoError(t, dc.FromPayload(p, &back))
	assert.Equal(t, "s3://secret-bucket/jobs", back["store"])
	// The same value twice seals differently (a fresh nonce each time).
	q, err := dc.ToPayload(map[string]string{"store": "s3://secret-bucket/jobs"})
	require.NoError(t, err)
	assert.NotEqual(t, p.Data, q.Data)
}

func TestAnAlteredPayloadOrAnotherKeyDoesNotOpen(t *testing.T) {
	k1 := newKey(t, "k1")
	c := &Codec{Keys: keyring(t, k1)}
	sealed, err := c.Encode([]*commonpb.Payload{{Data: []byte("hello")}})
	require.NoError(t, err)
	bad := &commonpb.Payload{Metadata: sealed[0].Metadata, Data: bytes.Clone(sealed[0].Data)}
	bad.Data[len(bad.Data)-1] ^= 1
	_, err = c.Decode([]*commonpb.Payload{bad})
	assert.ErrorContains(t, err, `does not open under key "k1"`)
	// Another secret under the same id.
	other := &Codec{Keys: keyring(t, Key{ID: "k1", Secret: newKey(t, "x").Secret})}
	_, err = other.Decode(sealed)
	assert.ErrorContains(t, err, "does not open")
	// A keyring without the id says which key is missing.
	_, err = (&Codec{Keys: keyring(t, newKey(t, "k2"))}).Decode(sealed)
	assert.ErrorContains(t, err, `sealed with key "k1", which the key file lacks`)
}

func TestRotationSealsWithTheFirstKeyAndOpensWithAny(t *testing.T) {
	old, next := newKey(t, "2026-01"), newKey(t, "2026-06")
	before := &Codec{Keys: keyring(t, old)}
	sealedOld, err := before.Encode([]*commonpb.Payload{{Data: []byte("old")}})
	require.NoError(t, err)
	after := &Codec{Keys: keyring(t, next, old)}
	sealedNew, err := after.Encode([]*commonpb.Payload{{Data: []byte("new")}})
	require.NoError(t, err)
	assert.Equal(t, "2026-06", string(sealedNew[0].Metadata[MetaKeyID]))
	opened, err := after.Decode([]*commonpb.Payload{sealedOld[0], sealedNew[0]})
	require.NoError(t, err)
	assert.Equal(t, "old", string(opened[0].Data))
	assert.Equal(t, "new", string(opened[1].Data))
}

func TestPlainPayloadsPassThroughDecode(t *testing.T) {
	plain, err := converter.GetDefaultDataConverter().ToPayload("written before the key")
	require.NoError(t, err)
	dc := DataConverter(nil, keyring(t, newKey(t, "k1")))
	var s string
	require.NoError(t, dc.FromPayload(plain, &s))
	assert.Equal(t, "written before the key", s)
}

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	k1, k2 := newKey(t, "k1"), newKey(t, "k2")
	text := fmt.Sprintf("# schooner payload keys\n%s %s\n\n%s %s\n", k1.ID, base64.StdEncoding.EncodeToString(k1.Secret),
		k2.ID, base64.StdEncoding.EncodeToString(k2.Secret))
	path := filepath.Join(dir, "keys")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	r, err := LoadKeyFile(path)
	require.NoError(t, err)
	assert.Equal(t, "k1", r.Current())
	assert.ElementsMatch(t, []string{"k1", "k2"}, r.IDs())

	require.NoError(t, os.Chmod(path, 0o644))
	_, err = LoadKeyFile(path)
	assert.ErrorContains(t, err, "chmod 600")
	require.NoError(t, os.Chmod(path, 0o600))

	for body, want := range map[string]string{
		"k1\n":             "line 1",
		"k1 not-base64!\n": `key "k1" is not base64`,
		"k1 " + base64.StdEncoding.EncodeToString([]byte("short")) + "\n": "5 bytes, want 32",
		"": "no keys",
	} {
		require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
		_, err = LoadKeyFile(path)
		assert.ErrorContains(t, err, want, "%q", body)
	}
	_, err = NewKeyring(k1, k1)
	assert.ErrorContains(t, err, "appears twice")

	// A directory is not a key file (its mode was reported instead).
	_, err = LoadKeyFile(dir)
	assert.ErrorContains(t, err, "is a directory")
}
