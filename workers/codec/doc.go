// Package codec encrypts Temporal payloads: every workflow input, result, signal, update,
// query answer, memo and heartbeat detail that schooner's clients and workers send through the
// Temporal server is sealed with AES-256-GCM before it leaves the process, so the server's
// database, its operators and anyone who can read histories without the key see only the
// key's id and ciphertext.
//
// Keys live in a key file on each machine that needs them (workers, the CLI, the codec
// server), never in a spec or a history. The file's first key encrypts; every key in it
// decrypts, so a key is rotated by putting a new one first and keeping the old ones until no
// history still needs them. Payloads without the encrypted encoding pass through Decode
// unchanged, so histories written before a key was configured stay readable.
//
// The codec server (Handler) lets the Temporal UI ("Codec Server endpoint" in its settings)
// and the temporal CLI (--codec-endpoint) show decoded payloads to people who can reach it; it
// must therefore only be reachable by people who may hold the key: bind it to loopback or put
// it behind authentication (Handler can require a bearer token).
package codec
