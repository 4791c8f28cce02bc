package wfclient

import (
	"sync"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// converters remembers the data converter each client was dialled with. The SDK's client
// does not expose it (and worker.New refuses any client but the SDK's own, so it cannot be
// wrapped), yet code that reads payloads outside the SDK's calls (a memo in a describe answer,
// an activity's heartbeat details) must decode them the same way: with a payload codec
// configured they are ciphertext to the default converter. A process dials a handful of
// clients, so the map stays small.
var converters sync.Map // client.Client → converter.DataConverter

// RememberConverter records that c was dialled with dc (workers.Dial does).
func RememberConverter(c client.Client, dc converter.DataConverter) {
	if dc != nil {
		converters.Store(c, dc)
	}
}

// ConverterOf is the converter to decode c's payloads with: the one it was dialled with (see
// RememberConverter), else the SDK's default.
func ConverterOf(c client.Client) converter.DataConverter {
	if dc, ok := converters.Load(c); ok {
		return dc.(converter.DataConverter)
	}
	return converter.GetDefaultDataConverter()
}
