package kvcache

import (
	"github.com/schooner-ml/schooner/internal/frame"
)

// parse checks one frame against section 3 and makes it a queue item. Anything malformed is a
// bad_request, which ends the connection: a writer that sends wrong shapes has a bug that
// acks would only hide.
func (h *Holder) parse(hdr frame.Header, payload []byte) (Item, *HolderError) {
	it := Item{Op: hdr.Op, Bytes: len(payload), payload: payload}
	bad := func(format string, args ...any) (Item, *HolderError) {
		return Item{}, refuse(CodeBadRequest, hdr.Op+": "+format, args...)
	}
	switch hdr.Op {
	case opPut:
		var m putMsg
		if err := hdr.Decode(&m); err != nil {
			return bad("%v", err)
		}
		elem := ElemSize(m.DType)
		switch {
		case m.Request == "":
			return bad("no request")
		case m.Kind != KindPrompt:
			return bad("kind %q is not %q", m.Kind, KindPrompt)
		case m.Layer < 0 || m.Tokens[0] < 0 || m.Tokens[1] < m.Tokens[0]:
			return bad("layer %d, tokens %v: want layer >= 0 and tokens [t0,t1) with 0 <= t0 <= t1", m.Layer, m.Tokens)
		case elem == 0:
			return bad("dtype %q is not bf16, f16 or f32", m.DType)
		case len(m.Shape) != 4 || m.Shape[0] != 2 || m.Shape[1] <= 0 || m.Shape[2] != m.Tokens[1]-m.Tokens[0] || m.Shape[3] <= 0:
			return bad("shape %v is not [2, kv_heads, %d, head_dim]", m.Shape, m.Tokens[1]-m.Tokens[0])
		case m.Last && (m.Layers == nil || m.Layers[0] < 0 || m.Layers[1] <= m.Layers[0]):
			return bad("a last put needs layers [l0,l1) with 0 <= l0 < l1")
		case m.Last && m.Step != nil && *m.Step < 0:
			return bad("step %d is negative", *m.Step)
		}
		if n, err := shapeBytes(m.Shape, elem, h.opts.MaxPayload); err != nil || n != len(payload) {
			return bad("shape %v %s needs %d payload bytes, got %d (%v)", m.Shape, m.DType, n, len(payload), err)
		}
		it.Request, it.msg = m.Request, m
	case opPutStep:
		var m putStepMsg
		if err := hdr.Decode(&m); err != nil {
			return bad("%v", err)
		}
		elem := ElemSize(m.DType)
		switch {
		case m.Step < 0:
			return bad("step %d is negative", m.Step)
		case len(m.Entries) == 0:
			return bad("no entries")
		case m.Layers[0] < 0 || m.Layers[1] <= m.Layers[0]:
			return bad("layers %v: want [l0,l1) with 0 <= l0 < l1", m.Layers)
		case elem == 0:
			return bad("dtype %q is not bf16, f16 or f32", m.DType)
		case len(m.Shape) != 5 || m.Shape[0] != len(m.Entries) || m.Shape[1] != m.Layers[1]-m.Layers[0] || m.Shape[2] != 2 || m.Shape[3] <= 0 || m.Shape[4] <= 0:
			return bad("shape %v is not [%d entries, %d layers, 2, kv_heads, head_dim]", m.Shape, len(m.Entries), m.Layers[1]-m.Layers[0])
		}
		for _, e := range m.Entries {
			if e.Request == "" || e.Token < 0 || (e.Step != nil && *e.Step < 0) {
				return bad("entry %+v needs a request, a token >= 0 and no negative step", e)
			}
		}
		if n, err := shapeBytes(m.Shape, elem, h.opts.MaxPayload); err != nil || n != len(payload) {
			return bad("shape %v %s needs %d payload bytes, got %d (%v)", m.Shape, m.DType, n, len(payload), err)
		}
		it.Step, it.msg = m.Step, m
	case opDrop, opGet, opDropDeployment, opList:
		var m requestMsg
		if err := hdr.Decode(&m); err != nil {
			return bad("%v", err)
		}
		if len(payload) > 0 {
			return bad("takes no payload")
		}
		if (hdr.Op == opDrop || hdr.Op == opGet) && m.Request == "" {
			return bad("no request")
		}
		it.Request, it.msg = m.Request, m
	case opLend:
		var m lendMsg
		if err := hdr.Decode(&m); err != nil {
			return bad("%v", err)
		}
		if len(payload) > 0 {
			return bad("takes no payload")
		}
		if err := checkLend(m, h.opts.Budget); err != nil {
			return bad("%v", err)
		}
		it.msg = m
	default:
		return bad("unknown op (a holder speaks put, put_step, drop, drop_deployment, get, list and lend)")
	}
	return it, nil
}
