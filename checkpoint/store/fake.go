package store

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// Op names a Store method, for the Fake's call log and error injection.
type Op string

// The operations of a Store.
const (
	OpPut    Op = "put"
	OpGet    Op = "get"
	OpList   Op = "list"
	OpDelete Op = "delete"
)

// Call is one recorded call on a Fake.
type Call struct {
	Op   Op
	Key  string   // the key, the list prefix, or the first deleted key
	Size int64    // bytes put
	Keys []string // keys deleted
	Err  error    // what the call returned
}

// Fake is an in-memory Store for tests: it checks checksums like the real stores, records
// every call, and fails calls on demand.
type Fake struct {
	// Hook, when set (before the Fake is used), runs at the start of every call, outside the
	// Fake's lock; a non-nil result fails the call. Tests use it to hold an upload in flight.
	Hook func(op Op, key string) error

	mu      sync.Mutex
	objects map[string]fakeObject
	calls   []Call
	fail    map[Op][]error
}

type fakeObject struct {
	data     []byte
	modified time.Time
}

// NewFake makes an empty Fake.
func NewFake() *Fake { return &Fake{objects: map[string]fakeObject{}, fail: map[Op][]error{}} }

// FailNext makes the next call of op fail with err; calls queue up, one error each.
func (f *Fake) FailNext(op Op, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[op] = append(f.fail[op], err)
}

// Reset drops every object, recorded call and pending failure.
func (f *Fake) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects, f.calls, f.fail = map[string]fakeObject{}, nil, map[Op][]error{}
}

// Calls returns the calls so far, oldest first.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// Data returns a copy of an object's bytes.
func (f *Fake) Data(key string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objects[key]
	return bytes.Clone(o.data), ok
}

// Set stores bytes under key without any checks, as a corrupting disk or a person would.
func (f *Fake) Set(key string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[key] = fakeObject{data: bytes.Clone(data), modified: time.Now()}
}

// String names the fake.
func (f *Fake) String() string { return "fake://" }

// begin runs the hook, then takes the lock (held on return, whatever the result) and pops an
// injected failure.
func (f *Fake) begin(op Op, key string) error {
	var err error
	if h := f.Hook; h != nil {
		err = h(op, key)
	}
	f.mu.Lock()
	if err != nil {
		return err
	}
	if q := f.fail[op]; len(q) > 0 {
		f.fail[op] = q[1:]
		return q[0]
	}
	return nil
}

// record logs a call; the lock is held.
func (f *Fake) record(c Call) { f.calls = append(f.calls, c) }

// Put stores a copy of the bytes if their CRC-32C matches.
func (f *Fake) Put(ctx context.Context, key string, r io.ReaderAt, size int64, crc uint32) error {
	err := f.put(ctx, key, r, size, crc)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(Call{Op: OpPut, Key: key, Size: size, Err: err})
	return err
}

func (f *Fake) put(ctx context.Context, key string, r io.ReaderAt, size int64, crc uint32) error {
	if err := f.begin(OpPut, key); err != nil {
		f.mu.Unlock()
		return err
	}
	f.mu.Unlock()
	if err := validKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	buf, err := readChecked(key, r, size, crc)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[key] = fakeObject{data: buf, modified: time.Now()}
	return nil
}

// Get returns a reader over a copy of the object.
func (f *Fake) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	err := f.begin(OpGet, key)
	defer f.mu.Unlock()
	if err == nil {
		err = validKey(key)
	}
	var rc io.ReadCloser
	if err == nil {
		if o, ok := f.objects[key]; ok {
			rc = io.NopCloser(bytes.NewReader(bytes.Clone(o.data)))
		} else {
			err = fmt.Errorf("getting %s from %s: %w", key, f, ErrNotFound)
		}
	}
	f.record(Call{Op: OpGet, Key: key, Err: err})
	return rc, err
}

// List returns the objects under prefix in key order.
func (f *Fake) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	err := f.begin(OpList, prefix)
	defer f.mu.Unlock()
	f.record(Call{Op: OpList, Key: prefix, Err: err})
	if err != nil {
		return nil, err
	}
	var infos []ObjectInfo
	for k, o := range f.objects {
		if strings.HasPrefix(k, prefix) {
			infos = append(infos, ObjectInfo{Key: k, Size: int64(len(o.data)), Modified: o.modified})
		}
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Key < infos[j].Key })
	return infos, nil
}

// Delete removes the keys.
func (f *Fake) Delete(ctx context.Context, keys ...string) error {
	first := ""
	if len(keys) > 0 {
		first = keys[0]
	}
	err := f.begin(OpDelete, first)
	defer f.mu.Unlock()
	if err == nil {
		for _, k := range keys {
			if err = validKey(k); err != nil {
				break
			}
		}
	}
	if err == nil {
		for _, k := range keys {
			delete(f.objects, k)
		}
	}
	f.record(Call{Op: OpDelete, Key: first, Keys: append([]string(nil), keys...), Err: err})
	return err
}
