package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/internal/netaddr"
	"github.com/schooner-ml/schooner/workers/codec"
)

func newCodecCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "codec",
		Short: "Encrypted payloads: make keys and serve the codec endpoint for the Temporal UI and CLI",
		Long: `codec manages the AES-256-GCM keys that seal every payload schooner sends through Temporal
(workflow inputs and results, signals, updates, queries, heartbeats), and serves the codec
endpoint that lets the Temporal UI and the temporal CLI show them decoded to people who may.

A key file holds one key a line, "<id> <base64 key>"; the first line's key seals, every key
opens (rotate by putting a new key first). It must be readable by its owner only (chmod 600).

  schooner codec keygen --id 2026-12 >> ~/.schooner/codec-keys && chmod 600 ~/.schooner/codec-keys
  schooner codec serve --key-file ~/.schooner/codec-keys --ui-origin http://localhost:8233
  temporal workflow show --workflow-id JOB --codec-endpoint http://127.0.0.1:8081`,
	}
	cmd.AddCommand(newCodecKeygenCommand(), newCodecServeCommand())
	return cmd
}

func newCodecKeygenCommand() *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use:   "keygen",
		Short: "Print a new random key line for a key file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if id == "" {
				id = time.Now().UTC().Format("2006-01-02")
			}
			secret := make([]byte, codec.KeySize)
			if _, err := rand.Read(secret); err != nil {
				return err
			}
			if _, err := codec.NewKeyring(codec.Key{ID: id, Secret: secret}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", id, base64.StdEncoding.EncodeToString(secret))
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "the key's id, stored beside every payload it seals (default: today's date)")
	return cmd
}

func newCodecServeCommand() *cobra.Command {
	var keyFile, listen, token string
	var origins []string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve /encode and /decode for the Temporal UI (Codec Server setting) and temporal --codec-endpoint",
		Long: `serve answers the codec protocol of the Temporal UI and CLI with the keys of --key-file.
Whoever reaches it can read every history those keys sealed: it listens on loopback by
default, and refuses any other address unless --token is set (callers then send
"Authorization: Bearer <token>"). --ui-origin names the UIs a browser may call it from.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			keys, err := codec.LoadKeyFile(keyFile)
			if err != nil {
				return err
			}
			if err := checkCodecListen(listen, token); err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("codec server: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "codec server on http://%s (keys %v; sealing with %q)\n", ln.Addr(), keys.IDs(), keys.Current())
			srv := &http.Server{Handler: codec.Handler(keys, codec.ServerOptions{Origins: origins, Token: token}),
				ReadHeaderTimeout: 10 * time.Second}
			go func() {
				<-cmd.Context().Done()
				_ = srv.Close()
			}()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&keyFile, "key-file", "", "the key file (required)")
	fs.StringVar(&listen, "listen", "127.0.0.1:8081", "address to listen on")
	fs.StringVar(&token, "token", "", "require this bearer token (required off loopback)")
	fs.StringSliceVar(&origins, "ui-origin", []string{"http://localhost:8233", "http://127.0.0.1:8233"}, "Temporal UI origins allowed to call from a browser")
	_ = cmd.MarkFlagRequired("key-file")
	return cmd
}

// checkCodecListen refuses a non-loopback address without a token: the endpoint decrypts.
func checkCodecListen(listen, token string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", listen, err)
	}
	if !netaddr.IsLoopback(host) && token == "" {
		return fmt.Errorf("--listen %s is not a loopback address: the codec server decrypts every history, so set --token (callers send it as a bearer token) or listen on 127.0.0.1", listen)
	}
	return nil
}
