package kvcache

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/schooner-ml/schooner/internal/frame"
)

// shmChunk is one chunk of an shm answer: what a chunk frame's header would say, and where its
// payload lies in the shared memory.
type shmChunk struct {
	Layers [2]int `json:"layers"`
	Tokens [2]int `json:"tokens"`
	DType  string `json:"dtype"`
	Shape  []int  `json:"shape"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
}

type shmMsg struct {
	Op        string     `json:"op"`
	Request   string     `json:"request"`
	Chunks    []shmChunk `json:"chunks"`
	AckedStep int        `json:"acked_step"`
	// Arena is the prompt's pieces where they lie in the arena, one layer each, by layer then
	// token (offsets into the arena); Chunks then holds the decode steps only.
	Arena []shmChunk `json:"arena,omitempty"`
	// Into says the chunks lie in the memory the reader lent, not in a file passed with the frame.
	Into bool `json:"into,omitempty"`
	// Stream says filled frames follow: a chunk is there once a filled frame covers it.
	Stream bool `json:"stream,omitempty"`
	// FromStep repeats a get's from_step (see endMsg).
	FromStep int `json:"from_step,omitempty"`
}

// maxShmChunks bounds the chunks of one shm answer: the memory needs no frame-sized pieces, so
// a long context goes in longer chunks (as many as the holder's copiers can fill in parallel)
// and the header stays far below its limit at any context length.
const maxShmChunks = 64

// maxShmHeader keeps an shm answer's header under the 64 KiB frame limit; a replica with more
// chunks than fit is answered by the chunk path.
const maxShmHeader = 60 << 10

// getShm answers a get over a unix socket with one shm frame: with into and a lent memory large
// enough, the replica is written into that memory and the frame passes no file (with stream,
// the frame goes first and filled frames follow the copy); otherwise it passes a memory file
// holding every chunk's payload, back to back. False when it could not (the caller answers by
// chunks).
func (cn *conn) getShm(uc *net.UnixConn, m requestMsg) bool {
	request, into, stream := m.Request, m.Into, m.Stream
	s, done := cn.h.store.snapshot(cn.key(request))
	start := s.startOf(m.FromStep)
	// A get from a step wants no prompt: the arena, which holds only prompts, has nothing for it.
	if m.Arena && into && stream && cn.arenaShared && s.inArena && start == 0 && cn.getArena(request, s) {
		cn.unpin = done // the answer points into the replica's arena pieces until the next get
		return true
	}
	defer done()
	ranges := s.rangesFrom(start, max(cn.h.opts.ChunkTokens, (s.tokens()-start+maxShmChunks-1)/maxShmChunks))
	msg := shmMsg{Op: opShm, Request: request, AckedStep: s.acked, FromStep: max(m.FromStep, 0)}
	total := s.lentChunks(&msg, ranges)
	msg.Into = into && total <= int64(len(cn.lent))
	msg.Stream = msg.Into && stream
	var hdr bytes.Buffer
	if err := frame.Write(&hdr, msg, nil); err != nil || hdr.Len() > maxShmHeader {
		return false
	}
	fd := -1
	switch {
	case msg.Stream:
		cn.write(msg, nil)
		cn.flush()
		cn.h.m.sent.Add(total)
		cn.fillStreamed(request, s, ranges, msg.Chunks)
		return true
	case msg.Into:
		fillShm(cn.lent[:total], s, ranges, msg.Chunks)
	case total > 0:
		var err error
		if fd, err = shmFile(s, ranges, msg.Chunks, total); err != nil {
			cn.h.opts.Logger.Warn().Err(err).Str("request", request).Msg("kv-cache get: no shared memory, answering by chunks")
			return false
		}
		defer unix.Close(fd)
	}
	cn.h.m.sent.Add(total)
	cn.sendFD(uc, hdr.Bytes(), fd)
	return true
}

// lentChunks lists the chunks of ranges in msg, back to back from offset 0 of the lent memory
// (or a memory file), and returns their bytes.
func (s snapshot) lentChunks(msg *shmMsg, ranges [][2]int) int64 {
	msg.Chunks = make([]shmChunk, len(ranges))
	var total int64
	for i, r := range ranges {
		n := int64(s.chunkBytes(r[0], r[1]))
		msg.Chunks[i] = shmChunk{Layers: [2]int{s.lo, s.hi}, Tokens: r, DType: s.layout.DType,
			Shape: []int{s.hi - s.lo, 2, s.layout.KVHeads, r[1] - r[0], s.layout.HeadDim}, Offset: total, Length: n}
		total += n
	}
	return total
}

// getArena answers a streamed get into lent memory by pointing at the prompt's pieces in the
// arena and copying only the decode steps into the lent memory (filled frames follow as
// usual). False, with nothing sent, when the steps do not fit the lent memory or the answer's
// header would pass its limit (the caller answers by copying).
func (cn *conn) getArena(request string, s snapshot) bool {
	msg := shmMsg{Op: opShm, Request: request, AckedStep: s.acked, Into: true, Stream: true}
	for l := s.lo; l < s.hi; l++ {
		for _, p := range s.prompt[l] {
			msg.Arena = append(msg.Arena, shmChunk{Layers: [2]int{l, l + 1}, Tokens: [2]int{p.t0, p.t1}, DType: s.layout.DType,
				Shape: []int{1, 2, s.layout.KVHeads, p.t1 - p.t0, s.layout.HeadDim}, Offset: p.off, Length: int64(len(p.data))})
		}
	}
	steps := len(s.steps)
	ranges := s.rangesFrom(s.promptTokens, max(cn.h.opts.ChunkTokens, (steps+maxShmChunks-1)/maxShmChunks))
	total := s.lentChunks(&msg, ranges)
	var hdr bytes.Buffer
	if total > int64(len(cn.lent)) || frame.Write(&hdr, msg, nil) != nil || hdr.Len() > maxShmHeader {
		return false
	}
	cn.write(msg, nil)
	cn.flush()
	var arenaBytes int64
	for _, c := range msg.Arena {
		arenaBytes += c.Length
	}
	cn.h.m.sent.Add(total + arenaBytes)
	cn.fillStreamed(request, s, ranges, msg.Chunks)
	return true
}

// sendFD writes one frame (hdr, no payload) with fd riding on its first bytes (none when fd
// is negative), after the frames buffered before it.
func (cn *conn) sendFD(uc *net.UnixConn, b []byte, fd int) {
	cn.flush()
	if cn.werr != nil {
		return
	}
	_ = cn.c.SetWriteDeadline(time.Now().Add(cn.h.opts.WriteTimeout))
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	n, _, err := uc.WriteMsgUnix(b, oob, nil)
	if err == nil && n < len(b) {
		_, err = uc.Write(b[n:])
	}
	if err != nil {
		cn.werr = err
		_ = cn.c.Close()
	}
}

// shmFile makes a memory file of total bytes holding the chunks of ranges at their offsets and
// returns its descriptor. Several goroutines fill it, each its own chunks.
func shmFile(s snapshot, ranges [][2]int, chunks []shmChunk, total int64) (int, error) {
	fd, err := unix.MemfdCreate("schooner-kv", unix.MFD_CLOEXEC)
	if err != nil {
		// No memfd (an old kernel, a sandbox): a file in /dev/shm, unlinked at once.
		f, ferr := os.CreateTemp("/dev/shm", "schooner-kv-*")
		if ferr != nil {
			return -1, fmt.Errorf("memfd_create: %v; /dev/shm: %w", err, ferr)
		}
		_ = os.Remove(f.Name())
		fd, err = unix.Dup(int(f.Fd()))
		_ = f.Close()
		if err != nil {
			return -1, fmt.Errorf("dup: %w", err)
		}
	}
	ok := false
	defer func() {
		if !ok {
			_ = unix.Close(fd)
		}
	}()
	if err := unix.Ftruncate(fd, total); err != nil {
		return -1, fmt.Errorf("sizing the memory file to %d bytes: %w", total, err)
	}
	mem, err := unix.Mmap(fd, 0, int(total), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return -1, fmt.Errorf("mapping the memory file: %w", err)
	}
	fillShm(mem, s, ranges, chunks)
	if err := unix.Munmap(mem); err != nil {
		return -1, fmt.Errorf("unmapping the memory file: %w", err)
	}
	ok = true
	return fd, nil
}

// fillStreamed fills the lent memory as fillShm does, in chunk order across the copiers, and
// says after each chunk that completes the filled prefix how far it reaches (a filled frame).
func (cn *conn) fillStreamed(request string, s snapshot, ranges [][2]int, chunks []shmChunk) {
	done := startFill(cn.lent, s, ranges, chunks)
	filled := make([]bool, len(ranges))
	upto := 0
	for range ranges {
		filled[<-done] = true
		moved := false
		for upto < len(ranges) && filled[upto] {
			upto++
			moved = true
		}
		if moved {
			cn.write(filledMsg{Op: opFilled, Request: request, Upto: upto}, nil)
			cn.flush()
		}
	}
	if len(ranges) == 0 {
		cn.write(filledMsg{Op: opFilled, Request: request}, nil)
	}
}

// fillShm writes the chunks of ranges at their offsets in mem and returns once all are there.
func fillShm(mem []byte, s snapshot, ranges [][2]int, chunks []shmChunk) {
	done := startFill(mem, s, ranges, chunks)
	for range ranges {
		<-done
	}
}

// startFill starts writing the chunks of ranges at their offsets in mem, several goroutines
// each its own chunks (one core's copy is far below the memory's bandwidth), and returns the
// channel on which each chunk's index arrives once it is written.
func startFill(mem []byte, s snapshot, ranges [][2]int, chunks []shmChunk) <-chan int {
	done := make(chan int, len(ranges))
	workers := min(len(ranges), runtime.GOMAXPROCS(0), 16)
	for w := range workers {
		go func() {
			for i := w; i < len(ranges); i += workers {
				c := chunks[i]
				s.fill(mem[c.Offset:c.Offset+c.Length], ranges[i][0], ranges[i][1])
				done <- i
			}
		}()
	}
	return done
}
