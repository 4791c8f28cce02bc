package workers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/schooner-ml/schooner/workers/codec"
	"github.com/schooner-ml/schooner/workers/wfclient"
)

// ClientConfig says how to reach a Temporal cluster: the embedded dev server, a
// self-hosted cluster with mTLS, or Temporal Cloud with an API key. The same flags serve
// every schooner command that talks to Temporal, so one binary scales from a laptop out.
type ClientConfig struct {
	Address   string
	Namespace string
	// TLSCertFile and TLSKeyFile are the client certificate for mTLS; both or neither.
	TLSCertFile string
	TLSKeyFile  string
	// TLSCAFile verifies the server with a private CA instead of the system roots.
	TLSCAFile     string
	TLSServerName string
	// TLS forces TLS with system roots even without certificate files.
	TLS    bool
	APIKey string
	// CodecKeyFile, when set, seals every payload with the keys of this file
	// (workers/codec): workflow inputs, results, signals, memos and heartbeats reach the
	// server as AES-256-GCM ciphertext.
	CodecKeyFile string
	// WaitForServer is how long Dial keeps trying a server that does not answer yet (a
	// worker started beside, or before, its cluster); 0 fails at the first refusal. Errors
	// that waiting cannot mend (credentials, TLS) fail at once.
	WaitForServer time.Duration
}

// DefaultAddress and DefaultNamespace match `schooner dev` and `temporal server start-dev`.
const (
	DefaultAddress   = "127.0.0.1:7233"
	DefaultNamespace = "default"
)

// Options builds SDK client options; logger and metrics may be nil.
func (c ClientConfig) Options(logger *TemporalLogger, metrics client.MetricsHandler) (client.Options, error) {
	opts := client.Options{HostPort: c.Address, Namespace: c.Namespace}
	if opts.HostPort == "" {
		opts.HostPort = DefaultAddress
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if logger != nil {
		opts.Logger = logger
	}
	if metrics != nil {
		opts.MetricsHandler = metrics
	}
	tlsConf, err := c.tlsConfig()
	if err != nil {
		return client.Options{}, err
	}
	opts.ConnectionOptions.TLS = tlsConf
	if c.APIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(c.APIKey)
	}
	if c.CodecKeyFile != "" {
		keys, err := codec.LoadKeyFile(c.CodecKeyFile)
		if err != nil {
			return client.Options{}, err
		}
		opts.DataConverter = codec.DataConverter(nil, keys)
	}
	return opts, nil
}

func (c ClientConfig) tlsConfig() (*tls.Config, error) {
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return nil, errors.New("--tls-cert and --tls-key must be given together")
	}
	if !c.TLS && c.TLSCertFile == "" && c.TLSCAFile == "" && c.TLSServerName == "" {
		return nil, nil
	}
	conf := &tls.Config{ServerName: c.TLSServerName, MinVersion: tls.VersionTLS12}
	if c.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("loading client certificate: %w", err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	if c.TLSCAFile != "" {
		pem, err := os.ReadFile(c.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("reading CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("reading CA file %s: no PEM certificates found", c.TLSCAFile)
		}
		conf.RootCAs = pool
	}
	return conf, nil
}

// Dial connects and checks the connection, so a wrong address fails here with the address
// in the message rather than later inside a worker. A server that is not up yet is tried
// again for c.WaitForServer, with a warning at every try.
func Dial(ctx context.Context, c ClientConfig, logger *TemporalLogger, metrics client.MetricsHandler) (client.Client, error) {
	opts, err := c.Options(logger, metrics)
	if err != nil {
		return nil, err
	}
	giveUp := time.Now().Add(c.WaitForServer)
	for wait := time.Second; ; wait = min(2*wait, 10*time.Second) {
		cl, err := client.DialContext(ctx, opts)
		if err == nil {
			wfclient.RememberConverter(cl, opts.DataConverter)
			return cl, nil
		}
		err = fmt.Errorf("connecting to Temporal at %s (namespace %s): %w", opts.HostPort, opts.Namespace, err)
		if !notUpYet(err) || time.Now().Add(wait).After(giveUp) {
			return nil, err
		}
		if logger != nil {
			logger.Warn("Temporal is not reachable yet; trying again", "in", wait.String(), "until", giveUp.Format(time.TimeOnly), "error", err)
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
	}
}

// notUpYet reports whether a dial failed because no server answered (yet): refused or timed
// out, as opposed to an answer that says no.
func notUpYet(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	return errors.As(err, &unavailable) || errors.As(err, &deadline)
}
