package codec

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
)

// KeySize is AES-256's key length in bytes.
const KeySize = 32

// Keyring holds the keys a process may use: the first encrypts, all decrypt.
type Keyring struct {
	current string
	keys    map[string][]byte
}

// Key is one named key.
type Key struct {
	ID     string
	Secret []byte
}

// NewKeyring makes a keyring of keys, the first the one that encrypts. Ids must be unique,
// non-empty and printable without spaces; secrets must be 32 bytes.
func NewKeyring(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("codec: no keys")
	}
	r := &Keyring{current: keys[0].ID, keys: map[string][]byte{}}
	for i, k := range keys {
		if k.ID == "" || strings.ContainsAny(k.ID, " \t\r\n") {
			return nil, fmt.Errorf("codec: key %d: id %q must be non-empty without spaces", i+1, k.ID)
		}
		if len(k.Secret) != KeySize {
			return nil, fmt.Errorf("codec: key %q: %d bytes, want %d (AES-256)", k.ID, len(k.Secret), KeySize)
		}
		if _, dup := r.keys[k.ID]; dup {
			return nil, fmt.Errorf("codec: key id %q appears twice", k.ID)
		}
		r.keys[k.ID] = append([]byte(nil), k.Secret...)
	}
	return r, nil
}

// Current is the id of the key that encrypts.
func (r *Keyring) Current() string { return r.current }

// IDs are every key's id, the current one first.
func (r *Keyring) IDs() []string {
	out := []string{r.current}
	for id := range r.keys {
		if id != r.current {
			out = append(out, id)
		}
	}
	return out
}

// ParseKeys reads a key file's text: one key a line, "<id> <base64 of 32 bytes>"; blank lines
// and lines starting with # are skipped. Errors name the line.
func ParseKeys(data []byte) ([]Key, error) {
	var keys []Key
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("line %d: want \"<id> <base64 key>\"", n)
		}
		secret, err := base64.StdEncoding.DecodeString(fields[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: key %q is not base64: %v", n, fields[0], err)
		}
		keys = append(keys, Key{ID: fields[0], Secret: secret})
	}
	return keys, sc.Err()
}

// LoadKeyFile reads a key file (see ParseKeys). Like ssh with its private keys, it refuses a
// file that other users may read or write: anyone who can read it can read every history.
func LoadKeyFile(path string) (*Keyring, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("codec key file: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("codec key file %s is a directory: give the file 'schooner codec keygen' lines were written to", path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("codec key file %s: mode %04o lets other users read or write it: chmod 600 it", path, st.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("codec key file: %w", err)
	}
	keys, err := ParseKeys(data)
	if err != nil {
		return nil, fmt.Errorf("codec key file %s: %w", path, err)
	}
	r, err := NewKeyring(keys...)
	if err != nil {
		return nil, fmt.Errorf("codec key file %s: %w", path, err)
	}
	return r, nil
}
