// Package kvcache is schooner's DéjàVu-style KV-cache holder: the process on every serving
// node that keeps a replica of the KV cache of the previous pipeline stage (a ring: stage s
// replicates to the node of stage (s+1) mod depth), so that a lost stage is restored from the
// replica instead of recomputing every prompt.
//
// The wire protocol is section 3 of docs/serving-protocol.md, framed by internal/frame. The
// holder ([Holder]) stores what writers put, keyed by (deployment, stage, request), inside a
// byte budget; it acknowledges a (request, step) only once stored and answers readers with
// the replica in token order, never with a half-stored step. [Client] is the Go side of the
// same bytes (router, workflows, tests); the Python inference worker has its own. [Assembler]
// and [MinAcked] turn a reader's answers into per-layer K/V tensors and a resume point.
//
// The package knows nothing of Temporal or torch: tensors are bytes with a dtype and a shape.
package kvcache
