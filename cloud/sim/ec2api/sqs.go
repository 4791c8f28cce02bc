package ec2api

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schooner-ml/schooner/cloud"
)

// EventsQueueName is the simulated SQS queue that receives the EC2 events EventBridge rules
// would forward: spot interruption warnings and the state changes of reclaimed instances.
const EventsQueueName = "schooner-ec2-events"

// sqsTargetPrefix marks the SQS JSON protocol's requests (X-Amz-Target: AmazonSQS.<Action>).
const sqsTargetPrefix = "AmazonSQS."

// sqsVisibility is how long a received message stays hidden before it is delivered again
// (SQS's default visibility timeout).
const sqsVisibility = 30 * time.Second

// sqsMaxKept bounds the undelivered messages, as a queue's retention period bounds SQS's.
const sqsMaxKept = 4096

// eventsQueue turns the backend's event log into EventBridge messages for the SQS subset the
// real SDK's ReceiveMessage, DeleteMessage and GetQueueUrl use.
type eventsQueue struct {
	mu       sync.Mutex
	after    int64 // backend events turned into messages so far
	pending  []sqsMessage
	inflight map[string]inflightMessage
	next     int
}

type sqsMessage struct {
	ID, Body string
}

type inflightMessage struct {
	msg     sqsMessage
	visible time.Time
}

func newEventsQueue(b Backend) *eventsQueue {
	q := &eventsQueue{inflight: map[string]inflightMessage{}}
	if ev := b.EventsSince(0); len(ev) > 0 {
		q.after = ev[len(ev)-1].Seq // a queue receives what happens after it exists
	}
	return q
}

// SQSQueueURL is the URL of the events queue on the started server.
func (s *Server) SQSQueueURL() string { return s.Addr() + "/" + s.opts.OwnerID + "/" + EventsQueueName }

// serveSQS answers one SQS JSON-protocol request.
func (s *Server) serveSQS(w http.ResponseWriter, r *http.Request, action string) {
	var in struct {
		QueueURL            string `json:"QueueUrl"`
		QueueName           string `json:"QueueName"`
		MaxNumberOfMessages int    `json:"MaxNumberOfMessages"`
		WaitTimeSeconds     int    `json:"WaitTimeSeconds"`
		ReceiptHandle       string `json:"ReceiptHandle"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		sqsError(w, "InvalidParameterValue", "the request body is not JSON: "+err.Error())
		return
	}
	if action != "GetQueueUrl" && !strings.HasSuffix(in.QueueURL, "/"+EventsQueueName) {
		sqsError(w, "QueueDoesNotExist", fmt.Sprintf("queue %q does not exist (this simulator serves %s)", in.QueueURL, EventsQueueName))
		return
	}
	switch action {
	case "GetQueueUrl":
		if in.QueueName != EventsQueueName {
			sqsError(w, "QueueDoesNotExist", fmt.Sprintf("queue %q does not exist (this simulator serves %s)", in.QueueName, EventsQueueName))
			return
		}
		sqsReply(w, map[string]string{"QueueUrl": "http://" + r.Host + "/" + s.opts.OwnerID + "/" + EventsQueueName})
	case "ReceiveMessage":
		s.receive(w, r, min(max(in.MaxNumberOfMessages, 1), 10), time.Duration(min(max(in.WaitTimeSeconds, 0), 20))*time.Second)
	case "DeleteMessage":
		s.events.mu.Lock()
		_, ok := s.events.inflight[in.ReceiptHandle]
		delete(s.events.inflight, in.ReceiptHandle)
		s.events.mu.Unlock()
		if !ok {
			sqsError(w, "ReceiptHandleIsInvalid", "the receipt handle is not that of a message in flight")
			return
		}
		sqsReply(w, struct{}{})
	default:
		sqsError(w, "UnsupportedOperation", "this simulator serves GetQueueUrl, ReceiveMessage and DeleteMessage")
	}
}

// receive waits up to wait for messages and returns at most n, hiding them for the
// visibility timeout.
func (s *Server) receive(w http.ResponseWriter, r *http.Request, n int, wait time.Duration) {
	deadline := time.Now().Add(wait)
	for {
		if msgs := s.takeMessages(n); len(msgs) > 0 || !time.Now().Before(deadline) {
			sqsReply(w, map[string]any{"Messages": msgs})
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// takeMessages moves new backend events into the queue and hands out up to n messages.
func (s *Server) takeMessages(n int) []map[string]string {
	q := s.events
	events := s.backend.EventsSince(q.currentAfter())
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range events {
		if e.Seq <= q.after {
			continue
		}
		q.after = e.Seq
		if body, ok := eventBridgeBody(e, s.opts.OwnerID); ok {
			q.next++
			q.pending = append(q.pending, sqsMessage{ID: "msg-" + strconv.Itoa(q.next), Body: body})
		}
	}
	if len(q.pending) > sqsMaxKept {
		q.pending = q.pending[len(q.pending)-sqsMaxKept:]
	}
	now := time.Now()
	for h, m := range q.inflight {
		if now.After(m.visible) {
			delete(q.inflight, h)
			q.pending = append(q.pending, m.msg)
		}
	}
	var out []map[string]string
	for len(q.pending) > 0 && len(out) < n {
		m := q.pending[0]
		q.pending = q.pending[1:]
		q.next++
		handle := m.ID + "-receipt-" + strconv.Itoa(q.next)
		q.inflight[handle] = inflightMessage{msg: m, visible: now.Add(sqsVisibility)}
		sum := md5.Sum([]byte(m.Body))
		out = append(out, map[string]string{"MessageId": m.ID, "ReceiptHandle": handle, "Body": m.Body, "MD5OfBody": hex.EncodeToString(sum[:])})
	}
	return out
}

func (q *eventsQueue) currentAfter() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.after
}

// eventBridgeBody is the EventBridge event EC2 sends for e: a spot interruption warning for a
// notice, a state change to terminated for a reclaimed instance; nothing for the rest.
func eventBridgeBody(e cloud.Event, account string) (string, bool) {
	if e.Instance.Provider != "" && e.Instance.Provider != "aws" {
		return "", false
	}
	detail := map[string]string{"instance-id": e.Instance.ID}
	var kind string
	switch e.Kind {
	case cloud.EventNotice:
		kind, detail["instance-action"] = "EC2 Spot Instance Interruption Warning", "terminate"
	case cloud.EventPreempted:
		kind, detail["state"] = "EC2 Instance State-change Notification", "terminated"
	default:
		return "", false
	}
	region := e.Instance.Region
	b, err := json.Marshal(map[string]any{
		"version": "0", "id": fmt.Sprintf("sim-%d", e.Seq), "detail-type": kind, "source": "aws.ec2",
		"account": account, "time": e.Time.UTC().Format(time.RFC3339), "region": region,
		"resources": []string{fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", region, account, e.Instance.ID)},
		"detail":    detail,
	})
	return string(b), err == nil
}

func sqsReply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_ = json.NewEncoder(w).Encode(v)
}

func sqsError(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("x-amzn-query-error", "AWS.SimpleQueueService."+code+";Sender")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.sqs#" + code, "message": msg})
}
