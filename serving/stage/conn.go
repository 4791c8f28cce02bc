package stage

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/schooner-ml/schooner/internal/frame"
)

// RoleNode is the hello role of the node side's connection to its own worker (ping, peers).
const RoleNode = "node"

// Load is a worker's load as its pong reports it.
type Load struct {
	Running      int `json:"running"`
	Waiting      int `json:"waiting"`
	KVBlocksFree int `json:"kv_blocks_free"`
}

// nodeConn is the node side's connection to its worker: used by one goroutine at a time.
type nodeConn struct {
	c net.Conn
	r *frame.Reader
}

const nodeConnTimeout = 2 * time.Second

// dialNode connects to the worker at addr as role node.
func dialNode(ctx context.Context, addr, deployment string, stage int) (*nodeConn, error) {
	d := net.Dialer{Timeout: nodeConnTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	n := &nodeConn{c: c, r: frame.NewReader(c, 1<<20)}
	var ok struct {
		Op      string `json:"op"`
		Version int    `json:"version"`
	}
	if err := n.roundTrip(frame.Hello{Op: "hello", Role: RoleNode, Deployment: deployment, Stage: stage, Version: frame.Version}, "hello_ok", &ok); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("hello to the worker at %s: %w", addr, err)
	}
	return n, nil
}

// roundTrip sends hdr and reads the answer named want into v; an error frame is an error.
func (n *nodeConn) roundTrip(hdr any, want string, v any) error {
	_ = n.c.SetDeadline(time.Now().Add(nodeConnTimeout))
	defer func() { _ = n.c.SetDeadline(time.Time{}) }()
	if err := frame.Write(n.c, hdr, nil); err != nil {
		return err
	}
	for {
		h, _, err := n.r.Next()
		if err != nil {
			return err
		}
		switch h.Op {
		case want:
			return h.Decode(v)
		case "error":
			var e frame.Error
			if err := h.Decode(&e); err != nil {
				return err
			}
			return e
		}
		// Anything else (a frame the worker sends unasked) is skipped.
	}
}

func (n *nodeConn) ping() (Load, error) {
	var pong struct {
		Load Load `json:"load"`
	}
	err := n.roundTrip(map[string]string{"op": "ping"}, "pong", &pong)
	return pong.Load, err
}

// peersOp is the peers message of docs/serving-protocol.md section 2.
type peersOp struct {
	Op     string `json:"op"` // "peers"
	Next   string `json:"next,omitempty"`
	Holder string `json:"holder,omitempty"`
}

func (n *nodeConn) peers(p Peers) error {
	var ok struct {
		Op string `json:"op"`
	}
	return n.roundTrip(peersOp{Op: "peers", Next: p.Next, Holder: p.Holder}, "peers_ok", &ok)
}

func (n *nodeConn) close() { _ = n.c.Close() }
