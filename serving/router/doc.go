// Package router is the OpenAI-compatible front end of a serving deployment: it accepts
// completions over HTTP (POST /v1/completions, GET /v1/models), queues them, dispatches them
// to the deployment's first pipeline stage and reads their tokens from its last stage over
// section 1 of docs/serving-protocol.md.
//
// The router is where a failover is invisible to clients. It remembers every token it has
// delivered per request; when a stage connection breaks, the requests in flight are paused
// (their HTTP streams stay open), and when the control plane hands over the replacement's
// address (Router.SetStages) they are resubmitted with resume_from and generated, so the new
// worker restores the KV cache from the holder and continues where the lost one stopped.
// Tokens are a pure function of the request, so the client sees exactly the stream an
// uninterrupted run would have produced; replayed tokens (step < resume_from) are dropped.
//
// Text goes through a Tokenizer; the default, Bytes, is byte-level (token = byte value
// 0..255), enough for tests and random-weight models. Clients that know the model's
// vocabulary send prompts as arrays of token ids.
//
// The package does not import Temporal: the ServingDeployment workflow's activities drive it
// through SetStages and read Status.
package router
