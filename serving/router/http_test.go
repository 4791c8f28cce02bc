package router_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/serving/router"
)

func TestBadHTTPRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t, router.Options{ContextLength: 32, MaxBodyBytes: 512})
	ok := `"model":"` + modelID + `","prompt":"hi"`
	cases := []struct {
		name, method, path, body string
		status                   int
		param                    string
	}{
		{"malformed JSON", "POST", "/v1/completions", `{"model":`, 400, ""},
		{"not an object", "POST", "/v1/completions", `[1,2]`, 400, ""},
		{"two values", "POST", "/v1/completions", `{` + ok + `}{}`, 400, ""},
		{"unknown field", "POST", "/v1/completions", `{` + ok + `,"frobnicate":1}`, 400, "frobnicate"},
		{"wrong type", "POST", "/v1/completions", `{` + ok + `,"max_tokens":"ten"}`, 400, "max_tokens"},
		{"negative max_tokens", "POST", "/v1/completions", `{` + ok + `,"max_tokens":-5}`, 400, "max_tokens"},
		{"zero max_tokens", "POST", "/v1/completions", `{` + ok + `,"max_tokens":0}`, 400, "max_tokens"},
		{"n=2", "POST", "/v1/completions", `{` + ok + `,"n":2}`, 400, "n"},
		{"echo", "POST", "/v1/completions", `{` + ok + `,"echo":true}`, 400, "echo"},
		{"logprobs", "POST", "/v1/completions", `{` + ok + `,"logprobs":0}`, 400, "logprobs"},
		{"best_of", "POST", "/v1/completions", `{` + ok + `,"best_of":2}`, 400, "best_of"},
		{"suffix", "POST", "/v1/completions", `{` + ok + `,"suffix":"x"}`, 400, "suffix"},
		{"stop", "POST", "/v1/completions", `{` + ok + `,"stop":["\n"]}`, 400, "stop"},
		{"top_p", "POST", "/v1/completions", `{` + ok + `,"top_p":0.5}`, 400, "top_p"},
		{"no model", "POST", "/v1/completions", `{"prompt":"hi"}`, 400, "model"},
		{"no prompt", "POST", "/v1/completions", `{"model":"` + modelID + `"}`, 400, "prompt"},
		{"empty prompt", "POST", "/v1/completions", `{"model":"` + modelID + `","prompt":""}`, 400, "prompt"},
		{"two prompts", "POST", "/v1/completions", `{"model":"` + modelID + `","prompt":["a","b"]}`, 400, "prompt"},
		{"negative token", "POST", "/v1/completions", `{"model":"` + modelID + `","prompt":[1,-2]}`, 400, "prompt"},
		{"float token", "POST", "/v1/completions", `{"model":"` + modelID + `","prompt":[1.5]}`, 400, "prompt"},
		{"prompt too long", "POST", "/v1/completions", `{"model":"` + modelID + `","prompt":"` + strings.Repeat("x", 30) + `"}`, 400, "prompt"},
		{"body too large", "POST", "/v1/completions", `{"model":"` + modelID + `","prompt":"` + strings.Repeat("x", 600) + `"}`, 413, ""},
		{"stream_options without stream", "POST", "/v1/completions", `{` + ok + `,"stream_options":{"include_usage":true}}`, 400, "stream_options"},
		{"unknown model", "POST", "/v1/completions", `{"model":"nope","prompt":"hi"}`, 404, "model"},
		{"GET completions", "GET", "/v1/completions", ``, 405, ""},
		{"POST models", "POST", "/v1/models", `{}`, 405, ""},
		{"chat", "POST", "/v1/chat/completions", `{}`, 404, ""},
		{"root", "GET", "/", ``, 404, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, h.srv.URL+c.path, strings.NewReader(c.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			assert.Equal(t, c.status, res.StatusCode, string(body))
			assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
			var e struct {
				Error map[string]any `json:"error"`
			}
			require.NoError(t, json.Unmarshal(body, &e), string(body))
			for _, k := range []string{"message", "type", "param", "code"} {
				assert.Contains(t, e.Error, k, "OpenAI error bodies carry all four fields")
			}
			assert.Equal(t, "invalid_request_error", e.Error["type"])
			assert.NotEmpty(t, e.Error["message"])
			if c.param != "" {
				assert.Equal(t, c.param, e.Error["param"])
			}
			if c.status == 405 {
				assert.NotEmpty(t, res.Header.Get("Allow"))
			}
		})
	}
}

func TestAcceptedDefaults(t *testing.T) {
	t.Parallel()
	w := startFake(t, "first+last")
	h := newHarness(t, router.Options{DefaultMaxTokens: 5}, w)
	// Parameters at their defaults are accepted; max_tokens defaults; a seed is fixed.
	body := `{"model":"` + modelID + `","prompt":["x"],"n":1,"echo":false,"best_of":1,"logprobs":null,` +
		`"top_p":1,"stop":null,"presence_penalty":0,"user":"u"}`
	res, err := http.Post(h.srv.URL+"/v1/completions", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer res.Body.Close()
	var out struct {
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	require.Equal(t, 200, res.StatusCode)
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	assert.Equal(t, 5, out.Usage.CompletionTokens)
	sub := w.submitted()
	require.Len(t, sub, 1)
	assert.Equal(t, expectedText("x", sub[0].Seed, 5), out.Choices[0].Text)
	assert.InDelta(t, 1.0, sub[0].Temperature, 1e-9, "OpenAI's default temperature")
}
