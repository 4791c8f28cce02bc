package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// Metadata of an encrypted payload.
const (
	// Encoding marks a payload this codec sealed.
	Encoding = "binary/encrypted"
	// MetaKeyID names the key that sealed it.
	MetaKeyID = "encryption-key-id"
	// MetaCipher names the cipher, so a later cipher can sit beside this one.
	MetaCipher = "encryption-cipher"
	cipherName = "AES-256-GCM"
)

// Codec is a converter.PayloadCodec that seals each payload (its metadata and data, as one
// protobuf message) with AES-256-GCM under the keyring's current key and a random 96-bit
// nonce; the key id is bound in as additional data, so a payload moved under another key's id
// does not open.
type Codec struct {
	Keys *Keyring
}

var _ converter.PayloadCodec = (*Codec)(nil)

// Encode seals every payload.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	id := c.Keys.current
	aead, err := newAEAD(c.Keys.keys[id])
	if err != nil {
		return nil, err
	}
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("codec: encoding payload %d: %w", i, err)
		}
		nonce := make([]byte, aead.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return nil, fmt.Errorf("codec: nonce: %w", err)
		}
		sealed := aead.Seal(nonce, nonce, plain, []byte(id))
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(Encoding),
				MetaKeyID:                  []byte(id),
				MetaCipher:                 []byte(cipherName),
			},
			Data: sealed,
		}
	}
	return out, nil
}

// Decode opens every sealed payload and passes the others through unchanged (histories
// written before a key was configured). A payload sealed under a key the keyring lacks, or
// altered, is an error that names the key id.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != Encoding {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetaKeyID])
		if name := string(p.GetMetadata()[MetaCipher]); name != cipherName {
			return nil, fmt.Errorf("codec: payload %d: cipher %q, this build knows %s", i, name, cipherName)
		}
		key, ok := c.Keys.keys[id]
		if !ok {
			return nil, fmt.Errorf("codec: payload %d was sealed with key %q, which the key file lacks (it has %v)", i, id, c.Keys.IDs())
		}
		aead, err := newAEAD(key)
		if err != nil {
			return nil, err
		}
		data := p.GetData()
		if len(data) < aead.NonceSize()+aead.Overhead() {
			return nil, fmt.Errorf("codec: payload %d under key %q is too short to be sealed", i, id)
		}
		plain, err := aead.Open(nil, data[:aead.NonceSize()], data[aead.NonceSize():], []byte(id))
		if err != nil {
			return nil, fmt.Errorf("codec: payload %d does not open under key %q (altered, or sealed by another key of that id)", i, id)
		}
		var q commonpb.Payload
		if err := proto.Unmarshal(plain, &q); err != nil {
			return nil, fmt.Errorf("codec: payload %d under key %q: %w", i, id, err)
		}
		out[i] = &q
	}
	return out, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("codec: %w", err)
	}
	return cipher.NewGCM(block)
}

// DataConverter is parent (nil: the SDK's default) with every payload sealed by keys: what a
// client's or worker's client.Options.DataConverter should be when a key is configured.
func DataConverter(parent converter.DataConverter, keys *Keyring) converter.DataConverter {
	if parent == nil {
		parent = converter.GetDefaultDataConverter()
	}
	return converter.NewCodecDataConverter(parent, &Codec{Keys: keys})
}
