package checkpoint

import "fmt"

// Reserve grows every slot not being written to hold a checkpoint of n bytes (space allocated
// and synced), so that the first saves after a trainer's start do not pay for it: on a 5.7 GB
// shard that first save cost seconds. A slot is pinned while it grows, so no save picks it
// meanwhile; a slot a save holds grows at that save as before. It returns how many slots hold
// n bytes now.
func (e *Engine) Reserve(n int64) (int, error) {
	if n < 0 {
		return 0, fmt.Errorf("reserving %d bytes: negative", n)
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return 0, ErrClosed
	}
	var grow []*slot
	ready := 0
	for _, s := range e.slots {
		switch {
		case s.state == slotWriting:
		case s.capacity >= alignUp(n):
			ready++
		default:
			s.pins++
			grow = append(grow, s)
		}
	}
	e.mu.Unlock()
	var firstErr error
	for _, s := range grow {
		err := s.reserve(n)
		e.unpin(s)
		if err == nil {
			ready++
		} else if firstErr == nil {
			firstErr = err
		}
	}
	return ready, firstErr
}
