package router

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// APIError is an error in OpenAI's shape, with the HTTP status it is sent with.
type APIError struct {
	Status  int     `json:"-"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *APIError) Error() string { return e.Message }

// Error types and codes the router sends.
const (
	typeInvalid     = "invalid_request_error"
	typeRateLimit   = "rate_limit_error"
	typeServer      = "server_error"
	codeQueueFull   = "queue_full"
	codeWorkerLost  = "worker_lost"
	codeUnsupported = "unsupported_parameter"
	codeContext     = "context_length_exceeded"
)

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func invalid(param, code, msg string) *APIError {
	return &APIError{Status: http.StatusBadRequest, Message: msg, Type: typeInvalid, Param: strp(param), Code: strp(code)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *APIError, retryAfterSeconds int) {
	if retryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	}
	writeJSON(w, e.Status, errorBody{Error: e})
}

type errorBody struct {
	Error *APIError `json:"error"`
}

// completionRequest is the body of POST /v1/completions. Parameters the router does not
// implement are decoded so that a non-default value is refused rather than ignored.
type completionRequest struct {
	Model            string          `json:"model"`
	Prompt           json.RawMessage `json:"prompt"`
	MaxTokens        *int64          `json:"max_tokens"`
	Temperature      *float64        `json:"temperature"`
	Seed             *int64          `json:"seed"`
	N                *int64          `json:"n"`
	Stream           *bool           `json:"stream"`
	StreamOptions    *streamOptions  `json:"stream_options"`
	User             *string         `json:"user"`
	Echo             *bool           `json:"echo"`
	Logprobs         json.RawMessage `json:"logprobs"`
	BestOf           *int64          `json:"best_of"`
	Suffix           *string         `json:"suffix"`
	Stop             json.RawMessage `json:"stop"`
	TopP             *float64        `json:"top_p"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
	LogitBias        map[string]any  `json:"logit_bias"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type completion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   *usage   `json:"usage,omitempty"`
}

type choice struct {
	Text         string  `json:"text"`
	Index        int     `json:"index"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type modelList struct {
	Object string  `json:"object"`
	Data   []model `json:"data"`
}
