package ec2api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"net/http"
	"net/url"
	"strings"
)

// APIVersion is the only EC2 API version the face speaks; the SDK sends it on every call.
const APIVersion = "2016-11-15"

// Namespace is the XML namespace of EC2 replies for APIVersion.
const Namespace = "http://ec2.amazonaws.com/doc/" + APIVersion + "/"

// call is one parsed EC2 request.
type call struct {
	ctx       context.Context
	action    string
	params    url.Values
	region    string // from the SigV4 scope; empty for unsigned requests
	requestID string
}

// responseHeader is what every EC2 query response carries before its own fields: the API
// namespace and the id of the request it answers. Embedded, encoding/xml writes its fields
// as the response's own.
type responseHeader struct {
	Xmlns     string `xml:"xmlns,attr"`
	RequestID string `xml:"requestId"`
}

// header is the responseHeader of the response to c.
func (c *call) header() responseHeader {
	return responseHeader{Xmlns: Namespace, RequestID: c.requestID}
}

type handler func(s *Server, c *call) (any, *apiError)

var handlers = map[string]handler{
	"RunInstances":             (*Server).runInstances,
	"DescribeInstances":        (*Server).describeInstances,
	"TerminateInstances":       (*Server).terminateInstances,
	"DescribeSpotPriceHistory": (*Server).describeSpotPriceHistory,
}

// serveAPI handles one EC2 Query request: form parameters in a POST body (or a GET query),
// an XML document back.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	c := &call{ctx: r.Context(), requestID: newRequestID(), region: regionOf(r)}
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		writeError(w, c.requestID, errf(http.StatusMethodNotAllowed, "InvalidAction", "EC2 accepts POST and GET, not %s", r.Method))
		return
	}
	if err := r.ParseForm(); err != nil {
		writeError(w, c.requestID, invalidParam("malformed form body: %v", err))
		return
	}
	c.params = r.Form
	c.action = c.params.Get("Action")
	if c.action == "" {
		writeError(w, c.requestID, missing("Action"))
		return
	}
	if s.admit(c.action) {
		writeError(w, c.requestID, errf(http.StatusServiceUnavailable, "RequestLimitExceeded", "Request limit exceeded."))
		return
	}
	switch v := c.params.Get("Version"); {
	case v == "":
		writeError(w, c.requestID, missing("Version"))
		return
	case v != APIVersion:
		writeError(w, c.requestID, errf(http.StatusBadRequest, "NoSuchVersion", "An invalid or unsupported API version %s was specified; this simulator speaks %s", v, APIVersion))
		return
	}
	h, ok := handlers[c.action]
	if !ok {
		writeError(w, c.requestID, errf(http.StatusBadRequest, "InvalidAction", "The action %s is not valid for this web service.", c.action))
		return
	}
	out, aerr := h(s, c)
	if aerr != nil {
		writeError(w, c.requestID, aerr)
		return
	}
	writeXML(w, http.StatusOK, out)
}

// regionOf reads the region from the credential scope of a SigV4 Authorization header:
// "AWS4-HMAC-SHA256 Credential=AKID/20240101/us-east-1/ec2/aws4_request, ...". The signature
// itself is not checked: the simulator has no secrets to check it against.
func regionOf(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	i := strings.Index(auth, "Credential=")
	if i < 0 {
		return ""
	}
	scope := auth[i+len("Credential="):]
	if j := strings.IndexAny(scope, ", "); j >= 0 {
		scope = scope[:j]
	}
	parts := strings.Split(scope, "/")
	if len(parts) < 5 {
		return ""
	}
	return parts[2]
}

func writeXML(w http.ResponseWriter, status int, v any) {
	body, err := xml.Marshal(v)
	if err != nil {
		http.Error(w, "encoding reply: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
}

// newRequestID returns a UUID-shaped id, as EC2's request ids are.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
