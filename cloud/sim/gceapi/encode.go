package gceapi

import (
	"io"
	"net/http"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// timeLayout is GCE's timestamp format (RFC 3339 with milliseconds and a numeric offset).
const timeLayout = "2006-01-02T15:04:05.000-07:00"

// writeMessage writes a computepb message as the client library reads it: protojson with
// lowerCamelCase names.
func writeMessage(w http.ResponseWriter, m any) {
	msg, ok := m.(proto.Message)
	if !ok {
		writeError(w, apiInternal("reply is not a message"))
		return
	}
	b, err := protojson.Marshal(msg)
	if err != nil {
		writeError(w, apiInternal("encoding reply: "+err.Error()))
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_, _ = w.Write(b)
}

// readMessage decodes a request body into m, ignoring fields the face does not know, as
// the client does with replies.
func readMessage(r *http.Request, m proto.Message) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return apiInvalid("reading body: " + err.Error())
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, m); err != nil {
		return &apiError{Code: http.StatusBadRequest, Status: "INVALID_ARGUMENT", Reason: "parseError", Domain: "global",
			Message: "Invalid JSON payload received. " + err.Error()}
	}
	return nil
}
