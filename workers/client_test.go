package workers

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeSelfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "schooner-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	return certFile, keyFile
}

func TestClientOptionsDefaultsArePlaintextDev(t *testing.T) {
	opts, err := ClientConfig{}.Options(nil, nil)
	require.NoError(t, err)
	assert.Equal(t, DefaultAddress, opts.HostPort)
	assert.Equal(t, DefaultNamespace, opts.Namespace)
	assert.Nil(t, opts.ConnectionOptions.TLS)
	assert.Nil(t, opts.Credentials)
}

func TestClientOptionsMTLS(t *testing.T) {
	cert, key := writeSelfSigned(t, t.TempDir())
	opts, err := ClientConfig{Address: "tc:7233", TLSCertFile: cert, TLSKeyFile: key, TLSCAFile: cert, TLSServerName: "tc"}.Options(nil, nil)
	require.NoError(t, err)
	require.NotNil(t, opts.ConnectionOptions.TLS)
	assert.Len(t, opts.ConnectionOptions.TLS.Certificates, 1)
	assert.NotNil(t, opts.ConnectionOptions.TLS.RootCAs)
	assert.Equal(t, "tc", opts.ConnectionOptions.TLS.ServerName)
}

func TestClientOptionsAPIKey(t *testing.T) {
	opts, err := ClientConfig{APIKey: "secret"}.Options(nil, nil)
	require.NoError(t, err)
	assert.NotNil(t, opts.Credentials)
}

func TestClientOptionsBadTLSInput(t *testing.T) {
	dir := t.TempDir()
	cert, _ := writeSelfSigned(t, dir)
	_, err := ClientConfig{TLSCertFile: cert}.Options(nil, nil)
	assert.ErrorContains(t, err, "--tls-cert and --tls-key")
	_, err = ClientConfig{TLSCAFile: filepath.Join(dir, "missing.pem")}.Options(nil, nil)
	assert.ErrorContains(t, err, "reading CA file")
	junk := filepath.Join(dir, "junk.pem")
	require.NoError(t, os.WriteFile(junk, []byte("not pem"), 0o600))
	_, err = ClientConfig{TLSCAFile: junk}.Options(nil, nil)
	assert.ErrorContains(t, err, "no PEM certificates")
}
