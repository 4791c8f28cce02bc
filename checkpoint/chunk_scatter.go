package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sort"
	"sync"

	"github.com/schooner-ml/schooner/internal/parallel"
)

// A restore reads each chunk of a shard straight into the memory its tensors are restored to
// (a shared-memory file the client maps) and verifies the chunk's CRC-32C there, instead of
// reading the whole shard into fresh buffers and copying the selection out afterwards: one pass
// of writes over the restored bytes instead of two, and no whole shard held beside them. The
// checksum covers a whole chunk, whose bytes may belong to several tensors (or to tensors the
// restore does not want, or to neither), so a chunk is read as runs in data order: large pieces
// of wanted tensors land in place, everything else in a scratch buffer of at most one chunk. The
// CRC is then updated over the runs in the same order, while the chunk is still in cache, and
// only a chunk that verifies has its small pieces copied out of scratch.

// directPiece is the smallest piece of a wanted tensor read straight into place. Smaller ones
// are read through scratch with their neighbours and copied after the chunk verifies, so a
// chunk of many small tensors costs one read, not one per tensor.
const directPiece = 256 << 10

// scatterPlan says where each chunk of one shard is read to.
type scatterPlan struct {
	m       ShardMeta
	targets []scatterTarget // wanted tensors, by data offset
	longest int64           // the longest chunk: the scratch size
	scratch sync.Pool       // *[]byte of longest bytes
}

// scatterTarget is one wanted tensor: where it starts in the data and where it goes.
type scatterTarget struct {
	offset int64
	dst    []byte
}

// chunkReads is how one chunk is read: runs of its bytes in data order, then the small wanted
// pieces copied out of scratch once the chunk verifies.
type chunkReads struct {
	runs   [][]byte
	copies []chunkCopy
}

// chunkCopy is a small wanted piece, copied from scratch to its place after verification.
type chunkCopy struct{ to, from []byte }

// newScatterPlan checks dst against m: one entry per tensor, each nil or of its tensor's
// length, and wanted tensors that do not overlap in the data (one byte cannot land in two
// places in one read).
func newScatterPlan(m ShardMeta, dst [][]byte) (*scatterPlan, error) {
	if len(dst) != len(m.Tensors) {
		return nil, fmt.Errorf("step %d rank %d: %d destinations for %d tensors", m.Step, m.Rank, len(dst), len(m.Tensors))
	}
	p := &scatterPlan{m: m}
	for i, d := range dst {
		if d == nil {
			continue
		}
		if int64(len(d)) != m.Tensors[i].Length {
			return nil, fmt.Errorf("step %d rank %d: tensor %s: destination of %d bytes, tensor has %d",
				m.Step, m.Rank, m.Tensors[i].Name, len(d), m.Tensors[i].Length)
		}
		if len(d) > 0 {
			p.targets = append(p.targets, scatterTarget{offset: m.Tensors[i].Offset, dst: d})
		}
	}
	sort.Slice(p.targets, func(i, j int) bool { return p.targets[i].offset < p.targets[j].offset })
	for i := 1; i < len(p.targets); i++ {
		if prev := p.targets[i-1]; prev.offset+int64(len(prev.dst)) > p.targets[i].offset {
			return nil, fmt.Errorf("step %d rank %d: tensors overlap at data offset %d: %w", m.Step, m.Rank, p.targets[i].offset, ErrCorrupt)
		}
	}
	p.longest = longestChunk(m)
	return p, nil
}

// wholeDataPlan reads all of m's data into buf (m.Size bytes, as written, gaps included), as
// one target: how a whole shard is read when nothing is selected from it.
func wholeDataPlan(m ShardMeta, buf []byte) *scatterPlan {
	return &scatterPlan{m: m, targets: []scatterTarget{{offset: 0, dst: buf}}, longest: longestChunk(m)}
}

// longestChunk is the size of m's longest chunk: what one chunk's scratch must hold.
func longestChunk(m ShardMeta) int64 {
	var longest int64
	for _, c := range m.Chunks {
		longest = max(longest, c.Length)
	}
	return longest
}

// reads plans chunk i, taking scratch space into *scratch on first need (the caller hands it
// back with putScratch).
func (p *scatterPlan) reads(i int, scratch *[]byte) chunkReads {
	c := p.m.Chunks[i]
	end := c.Offset + c.Length
	var r chunkReads
	lastInScratch := false // the last run is in scratch, so the next scratch bytes extend it
	toScratch := func(from, to int64) []byte {
		if *scratch == nil {
			*scratch = p.getScratch()
		}
		if n := len(r.runs); lastInScratch {
			r.runs[n-1] = (*scratch)[from-c.Offset-int64(len(r.runs[n-1])) : to-c.Offset]
		} else {
			r.runs = append(r.runs, (*scratch)[from-c.Offset:to-c.Offset])
		}
		lastInScratch = true
		return (*scratch)[from-c.Offset : to-c.Offset]
	}
	at := c.Offset
	// The first target that ends after the chunk starts.
	k := sort.Search(len(p.targets), func(k int) bool {
		t := p.targets[k]
		return t.offset+int64(len(t.dst)) > c.Offset
	})
	for ; k < len(p.targets) && p.targets[k].offset < end; k++ {
		t := p.targets[k]
		from, to := max(t.offset, c.Offset), min(t.offset+int64(len(t.dst)), end)
		if from > at {
			toScratch(at, from)
		}
		part := t.dst[from-t.offset : to-t.offset]
		if to-from >= directPiece {
			r.runs = append(r.runs, part)
			lastInScratch = false
		} else {
			r.copies = append(r.copies, chunkCopy{to: part, from: toScratch(from, to)})
		}
		at = to
	}
	if at < end {
		toScratch(at, end)
	}
	return r
}

func (p *scatterPlan) getScratch() []byte {
	if b, ok := p.scratch.Get().(*[]byte); ok {
		return *b
	}
	return make([]byte, p.longest)
}

func (p *scatterPlan) putScratch(b []byte) {
	if b != nil {
		p.scratch.Put(&b)
	}
}

// verify checks chunk i's CRC-32C over its runs and, when it matches, copies the small wanted
// pieces into place. where names the file or object for the error.
func (p *scatterPlan) verify(i int, r chunkReads, where string) error {
	c := p.m.Chunks[i]
	var crc uint32
	for _, run := range r.runs {
		crc = crc32.Update(crc, Castagnoli, run)
	}
	if crc != c.CRC32C {
		return fmt.Errorf("step %d rank %d chunk %d at offset %d in %s: crc32c %08x, want %08x: %w",
			p.m.Step, p.m.Rank, i, c.Offset, where, crc, c.CRC32C, ErrCorrupt)
	}
	for _, cp := range r.copies {
		copy(cp.to, cp.from)
	}
	return nil
}

// verifyWhole checks the chunk checksums against the whole data's, as every read does.
func (p *scatterPlan) verifyWhole() error {
	if got := combineChunkCRCs(p.m.Chunks); got != p.m.CRC32C {
		return fmt.Errorf("step %d rank %d: chunk checksums combine to %08x, metadata says %08x: %w",
			p.m.Step, p.m.Rank, got, p.m.CRC32C, ErrCorrupt)
	}
	return nil
}

// readAt reads and verifies every chunk of the plan from f at the chunks' offsets, several
// chunks at a time; the first failing chunk in order is the error.
func (p *scatterPlan) readAt(ctx context.Context, f io.ReaderAt, where string) error {
	err := parallel.InOrder(ctx, len(p.m.Chunks), parallel.Workers(), func(i int) error {
		var scratch []byte
		defer func() { p.putScratch(scratch) }()
		r := p.reads(i, &scratch)
		at := p.m.Chunks[i].Offset
		for _, run := range r.runs {
			if _, err := f.ReadAt(run, at); err != nil {
				if errors.Is(err, io.EOF) {
					return fmt.Errorf("step %d rank %d chunk %d is cut short in %s: %w", p.m.Step, p.m.Rank, i, where, ErrCorrupt)
				}
				return fmt.Errorf("reading step %d chunk %d: %w", p.m.Step, i, err)
			}
			at += int64(len(run))
		}
		return p.verify(i, r, where)
	})
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return fmt.Errorf("reading step %d: %w", p.m.Step, err)
		}
		return err
	}
	return p.verifyWhole()
}

// readStream reads and verifies every chunk of the plan, in order, from r positioned at the
// start of the data. Read errors come back as r gave them, for the caller to classify.
func (p *scatterPlan) readStream(ctx context.Context, r io.Reader, where string) error {
	var scratch []byte
	for i := range p.m.Chunks {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("reading step %d: %w", p.m.Step, err)
		}
		cr := p.reads(i, &scratch)
		for _, run := range cr.runs {
			if _, err := io.ReadFull(r, run); err != nil {
				return err
			}
		}
		if err := p.verify(i, cr, where); err != nil {
			return err
		}
	}
	return p.verifyWhole()
}
