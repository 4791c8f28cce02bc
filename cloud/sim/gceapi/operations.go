package gceapi

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/schooner-ml/schooner/cloud"
)

// OperationTypePreempted is the zone operation GCE records when it reclaims a spot VM.
const OperationTypePreempted = "compute.instances.preempted"

// operation is one zone operation as the face keeps it: without a project, because the
// backend has none; links are built for the project of the request that reads it.
type operation struct {
	seq    int64
	name   string
	zone   string
	kind   string // insert, delete, compute.instances.preempted
	target string // VM name
	user   string
	// requestID is the insert's requestId, forgotten with the operation.
	requestID string
	started   time.Time
	failure   *opFailure // set when the operation finished with an error
}

// opStore holds the operations of every zone in creation order. Preemption operations are
// derived from the backend's event log, read incrementally.
type opStore struct {
	seq       int64
	byName    map[string]*operation // zone + "/" + name
	order     []*operation
	eventSeq  int64
	requestID map[string]*operation // insert requestId, for idempotent retries
}

func newOpStore() *opStore {
	return &opStore{byName: map[string]*operation{}, requestID: map[string]*operation{}}
}

// maxOperations is how many zone operations the face keeps. GCE keeps operations for a
// limited time; a face that runs for days forgets the oldest instead, so neither the store nor
// an operations list grows with every insert and preemption ever made.
const maxOperations = 4096

// add records op, forgetting the oldest past maxOperations; h.mu must be held.
func (s *opStore) add(op *operation) *operation {
	s.seq++
	op.seq = s.seq
	s.byName[op.zone+"/"+op.name] = op
	s.order = append(s.order, op)
	if n := len(s.order) - maxOperations; n > 0 {
		for _, old := range s.order[:n] {
			delete(s.byName, old.zone+"/"+old.name)
			if old.requestID != "" && s.requestID[old.requestID] == old {
				delete(s.requestID, old.requestID)
			}
		}
		s.order = append([]*operation(nil), s.order[n:]...)
	}
	return op
}

// newOperation records a finished user operation; h.mu must be held.
func (h *Handler) newOperation(zone, kind, target string, failure *opFailure) *operation {
	now := h.now()
	name := fmt.Sprintf("operation-%d-%x", now.UnixMilli(), h.ops.seq+1)
	return h.ops.add(&operation{name: name, zone: zone, kind: kind, target: target, user: "schooner@simulator", started: now, failure: failure})
}

// syncEvents turns new preemption events of the backend into zone operations; h.mu must
// be held.
func (h *Handler) syncEvents() {
	for _, ev := range h.b.EventsSince(h.ops.eventSeq) {
		h.ops.eventSeq = ev.Seq
		if ev.Kind != cloud.EventPreempted {
			continue
		}
		inst := ev.Instance
		h.ops.add(&operation{
			name:    fmt.Sprintf("systemevent-%d-%s", ev.Time.UnixMilli(), inst.ID),
			zone:    inst.Zone,
			kind:    OperationTypePreempted,
			target:  inst.ID,
			user:    "system",
			started: ev.Time,
		})
	}
}

// proto renders op for project. Every operation is finished by the time it is recorded,
// since the backend acts at once; the reply to the call that started it still says
// RUNNING (running is true), as GCE's does, so clients go through their polling path and
// read the outcome, errors included, from zoneOperations.get.
func (op *operation) proto(project string, running bool) *computepb.Operation {
	ts := op.started.Format(timeLayout)
	out := &computepb.Operation{
		Kind:          proto.String("compute#operation"),
		Id:            proto.Uint64(numericID("operation", op.zone+"/"+op.name)),
		Name:          proto.String(op.name),
		Zone:          proto.String(zoneLink(project, op.zone)),
		OperationType: proto.String(op.kind),
		TargetLink:    proto.String(instanceLink(project, op.zone, op.target)),
		TargetId:      proto.Uint64(numericID("instance", op.target)),
		User:          proto.String(op.user),
		InsertTime:    proto.String(ts),
		StartTime:     proto.String(ts),
		SelfLink:      proto.String(operationLink(project, op.zone, op.name)),
	}
	if op.kind == OperationTypePreempted {
		out.StatusMessage = proto.String("Instance was preempted.")
	}
	if running {
		out.Status = computepb.Operation_RUNNING.Enum()
		out.Progress = proto.Int32(0)
		return out
	}
	out.Status = computepb.Operation_DONE.Enum()
	out.Progress = proto.Int32(100)
	out.EndTime = proto.String(ts)
	if f := op.failure; f != nil {
		out.Error = &computepb.Error{Errors: []*computepb.Errors{{Code: proto.String(f.code), Message: proto.String(f.message)}}}
		out.HttpErrorStatusCode = proto.Int32(int32(f.httpCode))
		out.HttpErrorMessage = proto.String(f.httpMessage)
	}
	return out
}

// opFields resolves filter fields on a rendered operation.
func opFields(op *computepb.Operation) fields {
	return fieldTable(map[string]func() string{
		"name":          op.GetName,
		"operationType": op.GetOperationType,
		"status":        func() string { return op.GetStatus().String() },
		"targetLink":    op.GetTargetLink,
		"targetId":      func() string { return strconv.FormatUint(op.GetTargetId(), 10) },
		"user":          op.GetUser,
		"zone":          op.GetZone,
	})
}

func (h *Handler) getOperation(r *http.Request, c call) (any, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.syncEvents()
	op, ok := h.ops.byName[c.zone+"/"+r.PathValue("operation")]
	if !ok {
		return nil, apiNotFound("The resource '" + zonePath(c.project, c.zone) + "/operations/" + r.PathValue("operation") + "' was not found")
	}
	return op.proto(c.project, false), nil
}

func (h *Handler) listOperations(r *http.Request, c call) (any, error) {
	f, size, after, err := listParams(r)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.syncEvents()
	type keyed struct {
		key string
		op  *computepb.Operation
	}
	var all []keyed
	for _, op := range h.ops.order {
		if op.zone != c.zone {
			continue
		}
		p := op.proto(c.project, false)
		if f.match(opFields(p)) {
			all = append(all, keyed{key: fmt.Sprintf("%016d", op.seq), op: p})
		}
	}
	h.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].key < all[j].key })
	page, next := paginate(all, func(k keyed) string { return k.key }, size, after)
	out := &computepb.OperationList{
		Kind:     proto.String("compute#operationList"),
		Id:       proto.String(zonePath(c.project, c.zone) + "/operations"),
		SelfLink: proto.String(zoneLink(c.project, c.zone) + "/operations"),
		Items:    make([]*computepb.Operation, 0, len(page)),
	}
	for _, k := range page {
		out.Items = append(out.Items, k.op)
	}
	if next != "" {
		out.NextPageToken = proto.String(next)
	}
	return out, nil
}
