package main

import (
	"os"

	"github.com/spf13/pflag"

	"github.com/schooner-ml/schooner/workers"
)

// addClientFlags binds the flags that say which Temporal cluster to talk to. Defaults come
// from the same environment variables the temporal CLI reads, so both tools agree.
func addClientFlags(fs *pflag.FlagSet, c *workers.ClientConfig) {
	fs.StringVar(&c.Address, "address", envOr("TEMPORAL_ADDRESS", workers.DefaultAddress), "Temporal frontend host:port (env TEMPORAL_ADDRESS)")
	fs.StringVar(&c.Namespace, "namespace", envOr("TEMPORAL_NAMESPACE", workers.DefaultNamespace), "Temporal namespace (env TEMPORAL_NAMESPACE)")
	fs.StringVar(&c.TLSCertFile, "tls-cert", os.Getenv("TEMPORAL_TLS_CERT"), "client certificate for mTLS (PEM; env TEMPORAL_TLS_CERT)")
	fs.StringVar(&c.TLSKeyFile, "tls-key", os.Getenv("TEMPORAL_TLS_KEY"), "client private key for mTLS (PEM; env TEMPORAL_TLS_KEY)")
	fs.StringVar(&c.TLSCAFile, "tls-ca", os.Getenv("TEMPORAL_TLS_CA"), "CA bundle that signs the server certificate (env TEMPORAL_TLS_CA)")
	fs.StringVar(&c.TLSServerName, "tls-server-name", "", "server name to verify, when it differs from the address")
	fs.BoolVar(&c.TLS, "tls", false, "use TLS with the system roots (implied by the other TLS flags and by --api-key)")
	fs.StringVar(&c.APIKey, "api-key", os.Getenv("TEMPORAL_API_KEY"), "API key, e.g. for Temporal Cloud (env TEMPORAL_API_KEY)")
	fs.StringVar(&c.CodecKeyFile, "codec-key-file", os.Getenv("SCHOONER_CODEC_KEY_FILE"),
		"seal every payload with the AES-256-GCM keys of this file (made by schooner codec keygen; env SCHOONER_CODEC_KEY_FILE); every worker and client of the namespace needs it")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
