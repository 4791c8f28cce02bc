package fakestage

import (
	"bufio"
	"net"
	"sync"

	"github.com/schooner-ml/schooner/internal/frame"
)

// Conn is one router connection. The connection's reader and a fake's generating goroutines
// all write to it, so writes are serialised.
type Conn struct {
	nc  net.Conn
	wmu sync.Mutex
	bw  *bufio.Writer
}

// Write sends frames in one flush.
func (c *Conn) Write(frames ...any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for _, f := range frames {
		if err := frame.Write(c.bw, f, nil); err != nil {
			return err
		}
	}
	return c.bw.Flush()
}

// refuse sends a connection-level error and hangs up, as section 1 has a worker do.
func (c *Conn) refuse(e frame.Error) {
	_ = c.Write(e)
	_ = c.nc.Close()
}
