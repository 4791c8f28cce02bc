package router

import (
	"encoding/json"
	"net/http"
	"time"
)

// streamCompletion answers with server-sent events: one chunk per token (characters split
// across byte tokens are held back until whole), a last chunk with the finish reason, an
// optional usage chunk, then "data: [DONE]". The headers go out as soon as the request is
// queued; a failure after that is an error event ({"error":{...}}) and the stream ends
// without [DONE].
func (r *Router) streamCompletion(w http.ResponseWriter, hr *http.Request, q *request, p parsed) {
	flusher, _ := w.(http.Flusher)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Request-Id", q.id)
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	flush()

	chunk := func(text string, reason *string) completion {
		return completion{ID: q.id, Object: "text_completion", Created: q.created.Unix(), Model: r.opts.Model,
			Choices: []choice{{Text: text, FinishReason: reason}}}
	}
	event := func(v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		_, err = w.Write(append(append([]byte("data: "), b...), '\n', '\n'))
		return err == nil
	}
	keepAlive := time.NewTicker(r.opts.KeepAlive)
	defer keepAlive.Stop()
	sent := 0
	var pending []byte // bytes of an incomplete character
	for {
		select {
		case <-hr.Context().Done():
			r.cancelRequest(q)
			return
		case <-keepAlive.C:
			// A comment line alone, not followed by a blank line: a blank line ends an event,
			// and clients such as openai-go read an empty event as broken JSON.
			if _, err := w.Write([]byte(": keep-alive\n")); err != nil {
				r.cancelRequest(q)
				return
			}
			flush()
			continue
		case <-q.notify:
		}
		toks, done, reason, aerr := r.snapshot(q, sent)
		sent += len(toks)
		ok := true
		for _, t := range toks {
			var ready []byte
			ready, pending = completeUTF8(r.opts.Tokenizer.Decode(pending, []int{t}))
			if len(ready) > 0 && ok {
				ok = event(chunk(validText(ready), nil))
			}
			pending = append([]byte(nil), pending...)
		}
		if done && aerr == nil && ok {
			if reason == "cancelled" {
				return // our own cancellation: the client is gone
			}
			ok = event(chunk(validText(pending), &reason))
			if ok && p.includeUsage {
				c := chunk("", nil)
				c.Choices = []choice{}
				c.Usage = &usage{PromptTokens: len(q.prompt), CompletionTokens: sent, TotalTokens: len(q.prompt) + sent}
				ok = event(c)
			}
			if ok {
				_, _ = w.Write([]byte("data: [DONE]\n\n"))
			}
		} else if done && aerr != nil && ok {
			event(errorBody{Error: aerr})
		}
		flush()
		if !ok {
			r.cancelRequest(q)
			return
		}
		if done {
			return
		}
	}
}
