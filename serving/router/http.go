package router

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// ServeHTTP serves POST /v1/completions, GET /v1/models and GET /v1/models/{id}; anything
// else gets an OpenAI-style 404 or 405.
func (r *Router) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	path := strings.TrimSuffix(hr.URL.Path, "/")
	switch {
	case path == "/v1/completions":
		if hr.Method != http.MethodPost {
			methodNotAllowed(w, hr, http.MethodPost)
			return
		}
		r.serveCompletion(w, hr)
	case path == "/v1/models":
		if hr.Method != http.MethodGet {
			methodNotAllowed(w, hr, http.MethodGet)
			return
		}
		writeJSON(w, http.StatusOK, modelList{Object: "list", Data: []model{r.model()}})
	case strings.HasPrefix(path, "/v1/models/"):
		if hr.Method != http.MethodGet {
			methodNotAllowed(w, hr, http.MethodGet)
			return
		}
		id := strings.TrimPrefix(path, "/v1/models/")
		if id != r.opts.Model {
			writeError(w, modelNotFound(id), 0)
			return
		}
		writeJSON(w, http.StatusOK, r.model())
	default:
		writeError(w, &APIError{Status: http.StatusNotFound, Type: typeInvalid, Code: strp("unknown_url"),
			Message: fmt.Sprintf("unknown URL: %s %s", hr.Method, hr.URL.Path)}, 0)
	}
}

func (r *Router) model() model {
	return model{ID: r.opts.Model, Object: "model", OwnedBy: "schooner"}
}

func modelNotFound(id string) *APIError {
	return &APIError{Status: http.StatusNotFound, Type: typeInvalid, Param: strp("model"), Code: strp("model_not_found"),
		Message: fmt.Sprintf("the model %q does not exist on this deployment", id)}
}

func methodNotAllowed(w http.ResponseWriter, hr *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, &APIError{Status: http.StatusMethodNotAllowed, Type: typeInvalid, Code: strp("method_not_allowed"),
		Message: fmt.Sprintf("%s is not allowed on %s; use %s", hr.Method, hr.URL.Path, allow)}, 0)
}

// parsed is a validated completion request.
type parsed struct {
	prompt       []int
	maxTokens    int
	temperature  float64
	seed         int64
	stream       bool
	includeUsage bool
}

// parse reads and validates a completion body.
func (r *Router) parse(w http.ResponseWriter, hr *http.Request) (parsed, *APIError) {
	var p parsed
	body, err := io.ReadAll(http.MaxBytesReader(w, hr.Body, r.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return p, &APIError{Status: http.StatusRequestEntityTooLarge, Type: typeInvalid, Code: strp("request_too_large"),
				Message: fmt.Sprintf("the request body is over %d bytes", r.opts.MaxBodyBytes)}
		}
		return p, invalid("", "", "reading the request body: "+err.Error())
	}
	var req completionRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return p, jsonError(err)
	}
	if dec.More() {
		return p, invalid("", "", "the request body holds more than one JSON value")
	}
	if req.Model == "" {
		return p, invalid("model", "", "you must provide a model parameter")
	}
	if req.Model != r.opts.Model {
		return p, modelNotFound(req.Model)
	}
	if req.N != nil && *req.N != 1 {
		return p, invalid("n", codeUnsupported, "only n=1 is supported")
	}
	if req.Echo != nil && *req.Echo {
		return p, invalid("echo", codeUnsupported, "echo is not supported")
	}
	if isSet(req.Logprobs) {
		return p, invalid("logprobs", codeUnsupported, "logprobs is not supported")
	}
	if req.BestOf != nil && *req.BestOf != 1 {
		return p, invalid("best_of", codeUnsupported, "best_of is not supported")
	}
	if req.Suffix != nil && *req.Suffix != "" {
		return p, invalid("suffix", codeUnsupported, "suffix is not supported")
	}
	if isSet(req.Stop) && string(req.Stop) != `[]` && string(req.Stop) != `""` {
		return p, invalid("stop", codeUnsupported, "stop sequences are not supported")
	}
	if req.TopP != nil && *req.TopP != 1 {
		return p, invalid("top_p", codeUnsupported, "top_p other than 1 is not supported")
	}
	if req.PresencePenalty != nil && *req.PresencePenalty != 0 {
		return p, invalid("presence_penalty", codeUnsupported, "presence_penalty is not supported")
	}
	if req.FrequencyPenalty != nil && *req.FrequencyPenalty != 0 {
		return p, invalid("frequency_penalty", codeUnsupported, "frequency_penalty is not supported")
	}
	if len(req.LogitBias) > 0 {
		return p, invalid("logit_bias", codeUnsupported, "logit_bias is not supported")
	}
	if p.prompt, err = r.promptTokens(req.Prompt); err != nil {
		return p, invalid("prompt", "", err.Error())
	}
	p.maxTokens = r.opts.DefaultMaxTokens
	if req.MaxTokens != nil {
		if *req.MaxTokens < 1 {
			return p, invalid("max_tokens", "", fmt.Sprintf("max_tokens must be at least 1, got %d", *req.MaxTokens))
		}
		p.maxTokens = int(min(*req.MaxTokens, math.MaxInt32))
	}
	if len(p.prompt)+p.maxTokens > r.opts.ContextLength {
		return p, invalid("prompt", codeContext, fmt.Sprintf(
			"this model's maximum context length is %d tokens, but you requested %d (%d in the prompt, %d for the completion)",
			r.opts.ContextLength, len(p.prompt)+p.maxTokens, len(p.prompt), p.maxTokens))
	}
	if req.Temperature != nil {
		if t := *req.Temperature; t < 0 || t > 2 || math.IsNaN(t) {
			return p, invalid("temperature", "", fmt.Sprintf("temperature must be between 0 and 2, got %g", t))
		}
		p.temperature = *req.Temperature
	} else {
		p.temperature = 1 // OpenAI's default
	}
	if req.Seed != nil {
		p.seed = *req.Seed
	} else {
		// Fixed now so that a resumed request samples what the lost worker would have.
		p.seed = mrand.Int64()
	}
	p.stream = req.Stream != nil && *req.Stream
	if req.StreamOptions != nil {
		if !p.stream {
			return p, invalid("stream_options", "", "stream_options is only allowed with stream: true")
		}
		p.includeUsage = req.StreamOptions.IncludeUsage
	}
	return p, nil
}

func isSet(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// jsonError turns a decoding error into an OpenAI error naming the field.
func jsonError(err error) *APIError {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		return invalid(typeErr.Field, "", fmt.Sprintf("%s: expected %s, got %s", typeErr.Field, typeErr.Type, typeErr.Value))
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return invalid("", "", "the request body is not valid JSON: "+err.Error())
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		f = strings.Trim(f, `"`)
		return invalid(f, "unknown_parameter", fmt.Sprintf("unrecognized request argument supplied: %s", f))
	}
	return invalid("", "", "decoding the request body: "+err.Error())
}

// promptTokens accepts a string, an array of token ids, or a one-element array of either.
func (r *Router) promptTokens(raw json.RawMessage) ([]int, error) {
	if !isSet(raw) {
		return nil, errors.New("a prompt is required")
	}
	var toks []int
	var text string
	var texts []string
	var batches [][]int
	switch {
	case json.Unmarshal(raw, &text) == nil:
		toks = r.opts.Tokenizer.Encode(text)
	case json.Unmarshal(raw, &toks) == nil:
	case json.Unmarshal(raw, &texts) == nil:
		if len(texts) != 1 {
			return nil, fmt.Errorf("exactly one prompt per request is supported, got %d", len(texts))
		}
		toks = r.opts.Tokenizer.Encode(texts[0])
	case json.Unmarshal(raw, &batches) == nil:
		if len(batches) != 1 {
			return nil, fmt.Errorf("exactly one prompt per request is supported, got %d", len(batches))
		}
		toks = batches[0]
	default:
		return nil, errors.New("prompt must be a string or an array of integer token ids")
	}
	if len(toks) == 0 {
		return nil, errors.New("the prompt is empty")
	}
	for i, t := range toks {
		if t < 0 || (r.opts.VocabSize > 0 && t >= r.opts.VocabSize) {
			return nil, fmt.Errorf("token %d of the prompt (%d) is not in the vocabulary", i, t)
		}
	}
	return toks, nil
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "cmpl-" + hex.EncodeToString(b[:])
}

func (r *Router) serveCompletion(w http.ResponseWriter, hr *http.Request) {
	p, aerr := r.parse(w, hr)
	if aerr != nil {
		writeError(w, aerr, 0)
		return
	}
	now := time.Now()
	q := &request{id: newID(), prompt: p.prompt, maxTokens: p.maxTokens, temperature: p.temperature, seed: p.seed,
		key: now.UnixNano(), created: now, notify: make(chan struct{}, 1)}
	if pre := r.prefillRouter(); pre != nil {
		if aerr := r.roomFor(q); aerr != nil {
			writeError(w, aerr, r.retryAfter(aerr))
			return
		}
		answered, aerr := r.prefillFirst(hr, q, pre)
		if aerr != nil {
			writeError(w, aerr, r.retryAfter(aerr))
			return
		}
		if answered {
			r.answer(w, hr, q, p)
			return
		}
	}
	if aerr := r.admit(q); aerr != nil {
		writeError(w, aerr, r.retryAfter(aerr))
		return
	}
	r.answer(w, hr, q, p)
}

// retryAfter is the Retry-After seconds of an error: the configured wait for a 429, else none.
func (r *Router) retryAfter(aerr *APIError) int {
	if aerr.Status == http.StatusTooManyRequests {
		return int(math.Ceil(r.opts.RetryAfter.Seconds()))
	}
	return 0
}

// answer writes q's completion as it comes (stream) or once it has ended.
func (r *Router) answer(w http.ResponseWriter, hr *http.Request, q *request, p parsed) {
	if p.stream {
		r.streamCompletion(w, hr, q, p)
		return
	}
	for done := false; !done; {
		if _, done, _, _ = r.snapshot(q, math.MaxInt); done {
			break
		}
		select {
		case <-hr.Context().Done():
			r.cancelRequest(q)
			return
		case <-q.notify:
		}
	}
	toks, _, reason, err := r.snapshot(q, 0)
	if err != nil {
		writeError(w, err, 0)
		return
	}
	text := validText(r.opts.Tokenizer.Decode(nil, toks))
	writeJSON(w, http.StatusOK, completion{ID: q.id, Object: "text_completion", Created: q.created.Unix(), Model: r.opts.Model,
		Choices: []choice{{Text: text, FinishReason: &reason}},
		Usage:   &usage{PromptTokens: len(q.prompt), CompletionTokens: len(toks), TotalTokens: len(q.prompt) + len(toks)}})
}
