package fakestage

// Submit is section 1's submit as a fake reads it.
type Submit struct {
	Request     string   `json:"request"`
	Prompt      []int    `json:"prompt"`
	MaxTokens   int      `json:"max_tokens"`
	Temperature float64  `json:"temperature"`
	Seed        int64    `json:"seed"`
	ResumeFrom  int      `json:"resume_from"`
	Generated   []int    `json:"generated"`
	ResumeMode  string   `json:"resume_mode"`
	Route       []string `json:"route"`
	Handoff     bool     `json:"handoff"`
	Expect      bool     `json:"expect"`
}

// The frames a worker sends. Structs, not maps: bench/routerq's step loop encodes thousands
// a second.
type (
	// Token is one generated token: step k of the request.
	Token struct {
		Op      string `json:"op"` // "token"
		Request string `json:"request"`
		Step    int    `json:"step"`
		Token   int    `json:"token"`
	}
	// Done ends a request; Steps counts every generated token.
	Done struct {
		Op      string `json:"op"` // "done"
		Request string `json:"request"`
		Reason  string `json:"reason"`
		Steps   int    `json:"steps"`
	}
	// Reply answers a submit: "accepted", or an "error" about the request (Code and Message).
	Reply struct {
		Op      string `json:"op"`
		Request string `json:"request"`
		Code    string `json:"code,omitempty"`
		Message string `json:"message,omitempty"`
	}
	pong struct {
		Op   string         `json:"op"`
		Load map[string]int `json:"load"`
	}
	helloOK struct {
		Op      string `json:"op"`
		Version int    `json:"version"`
	}
)

// Accepted answers a submit the fake took.
func Accepted(request string) Reply { return Reply{Op: "accepted", Request: request} }

// RequestError answers a submit with an error about that request ("overloaded",
// "restore_failed", ...); the connection stays open.
func RequestError(request, code, message string) Reply {
	return Reply{Op: "error", Request: request, Code: code, Message: message}
}

// NewToken is token k of a request.
func NewToken(request string, k, token int) Token {
	return Token{Op: "token", Request: request, Step: k, Token: token}
}

// NewDone ends a request after steps tokens, for reason ("length", "stop", ...).
func NewDone(request, reason string, steps int) Done {
	return Done{Op: "done", Request: request, Reason: reason, Steps: steps}
}
