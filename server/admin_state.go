package server

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/sns"
)

// Test-state controls: reset an account, export its queues and messages to
// a file, load such a file. They act in the request's account, in every
// region unless the region query parameter names one (a test suite's state
// is all of its account's; an account is where credentials draw the line).
//
//	POST /admin/api/reset   {} → {"deleted_queues": N}
//	GET  /admin/api/export  → a StateJSON
//	POST /admin/api/import  a StateJSON → {"queues": N, "messages": M}
//
// The export lists messages as the browse does: no lease is taken, no
// receive count grows. An import creates the file's queues, which must not
// exist, and stores each message with its id and state (engine.ImportMessages).
// Reset and import are actions (admin_actions.go): JSON bodies, cross-site
// requests refused.

// StateFormat is the version of the export format this server writes and
// reads.
const StateFormat = 1

// maxImportBytes bounds an import's body.
const maxImportBytes = 1 << 30

// exportPage is how many messages one browse of an export reads.
const exportPage = engine.MaxBrowseLimit

// StateJSON is an export: an account's queues with their messages.
type StateJSON struct {
	Format     int         `json:"format"`
	ExportedAt time.Time   `json:"exported_at"`
	Account    string      `json:"account,omitempty"`
	Queues     []QueueJSON `json:"queues"`
	// Topics are the account's SNS topics with their subscriptions
	// (admin_state_topics.go); an export without any leaves it out.
	Topics []TopicStateJSON `json:"topics,omitempty"`
}

// QueueJSON is one exported queue: its settable attributes (Policy and
// RedrivePolicy among them), tags and messages, oldest first.
type QueueJSON struct {
	Region     string             `json:"region,omitempty"`
	Name       string             `json:"name"`
	Attributes map[string]string  `json:"attributes,omitempty"`
	Tags       map[string]string  `json:"tags,omitempty"`
	Messages   []StateMessageJSON `json:"messages"`
}

// StateMessageJSON is one exported message. State is visible, inflight
// (until VisibleAt, the lease's deadline) or delayed (until VisibleAt).
// Only Body is needed to load one: a missing id is made, a missing sent
// time is the load's.
type StateMessageJSON struct {
	MessageID              string                          `json:"message_id,omitempty"`
	Body                   string                          `json:"body"`
	BodyBase64             bool                            `json:"body_base64,omitempty"`
	MessageAttributes      map[string]MessageAttributeJSON `json:"message_attributes,omitempty"`
	MessageGroupID         string                          `json:"message_group_id,omitempty"`
	MessageDeduplicationID string                          `json:"message_deduplication_id,omitempty"`
	TraceHeader            string                          `json:"aws_trace_header,omitempty"`
	SenderID               string                          `json:"sender_id,omitempty"`
	DeadLetterSourceARN    string                          `json:"dead_letter_source_arn,omitempty"`
	State                  string                          `json:"state,omitempty"`
	SentAt                 time.Time                       `json:"sent_at,omitzero"`
	VisibleAt              time.Time                       `json:"visible_at,omitzero"`
	ReceiveCount           int                             `json:"receive_count,omitempty"`
	FirstReceivedAt        time.Time                       `json:"first_received_at,omitzero"`
	Lease                  uint32                          `json:"lease,omitempty"`
}

// readOnlyAttributes are the queue attributes an export leaves out: the
// server computes them.
var readOnlyAttributes = []string{
	"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed",
	"CreatedTimestamp", "LastModifiedTimestamp", "QueueArn",
}

// linkAttributes name other queues; an import sets them once every queue
// of the file exists.
var linkAttributes = []string{"RedrivePolicy", "RedriveAllowPolicy"}

func (s *Server) requestAccount(r *http.Request) string {
	return cmp.Or(baton.AccountFromContext(r.Context()), s.account)
}

func (s *Server) actionReset(w http.ResponseWriter, r *http.Request) error {
	var in struct{}
	if err := decodeAction(r, &in); err != nil {
		return err
	}
	account, region := s.requestAccount(r), r.URL.Query().Get("region")
	n, err := s.engine.Reset(r.Context(), account, region)
	if err != nil {
		return err
	}
	topics, err := resetTopics(r.Context(), s.sns, account, region)
	if err != nil {
		return err
	}
	s.log.Info("reset: queues and topics deleted", "account", account, "region", cmp.Or(region, "every region"), "queues", n, "topics", topics)
	writeJSON(w, map[string]int{"deleted_queues": n, "deleted_topics": topics})
	return nil
}

func (s *Server) adminExport(w http.ResponseWriter, r *http.Request) {
	st, err := ExportState(r.Context(), s.engine, s.sns, s.requestAccount(r), r.URL.Query().Get("region"))
	if err != nil {
		s.adminError(w, err)
		return
	}
	writeJSON(w, st)
}

func (s *Server) actionImport(w http.ResponseWriter, r *http.Request) error {
	st, err := ReadState(io.LimitReader(r.Body, maxImportBytes))
	if err != nil {
		return baton.Errorf(baton.ErrInvalidParameterValue, "%v", err)
	}
	account := s.requestAccount(r)
	msgs, err := ImportState(r.Context(), s.engine, s.sns, account, st)
	if errors.Is(err, ErrStateQueueExists) {
		return baton.Errorf(baton.ErrQueueNameExists, "%v", err)
	}
	if errors.Is(err, sns.ErrStateTopicExists) {
		return baton.Errorf(baton.ErrInvalidParameterValue, "%v", err)
	}
	if err != nil {
		return err
	}
	s.log.Info("import: queues and topics loaded", "account", account, "queues", len(st.Queues), "messages", msgs, "topics", len(st.Topics))
	writeJSON(w, map[string]int{"queues": len(st.Queues), "messages": msgs, "topics": len(st.Topics)})
	return nil
}

// ExportState reads the account's queues of region (every region if empty)
// and their messages, and the topics of svc (nil: none), changing nothing.
func ExportState(ctx context.Context, eng *engine.Engine, svc *sns.Service, account, region string) (*StateJSON, error) {
	qs, err := eng.AccountQueues(ctx, account, region)
	if err != nil {
		return nil, err
	}
	out := &StateJSON{Format: StateFormat, ExportedAt: eng.Clock().Now().UTC(), Account: account, Queues: make([]QueueJSON, 0, len(qs))}
	for _, q := range qs {
		qj, err := exportQueue(ctx, eng, q)
		if errors.Is(err, errGone) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("queue %s: %w", q.Name, err)
		}
		out.Queues = append(out.Queues, qj)
	}
	if out.Topics, err = exportTopics(ctx, svc, account, region); err != nil {
		return nil, err
	}
	return out, nil
}

var errGone = errors.New("queue gone")

func exportQueue(ctx context.Context, eng *engine.Engine, q *baton.Queue) (QueueJSON, error) {
	ref := engine.QueueRef{Region: q.Region, Account: q.Account, Name: q.Name}
	attrs, err := eng.GetQueueAttributes(ctx, ref, []string{"All"})
	if err != nil {
		return QueueJSON{}, goneOr(err)
	}
	for _, a := range readOnlyAttributes {
		delete(attrs, a)
	}
	tags, err := eng.ListQueueTags(ctx, ref)
	if err != nil {
		return QueueJSON{}, goneOr(err)
	}
	qj := QueueJSON{Region: q.Region, Name: q.Name, Attributes: attrs, Tags: tags, Messages: []StateMessageJSON{}}
	for cursor := ""; ; {
		page, err := eng.BrowseMessages(ctx, ref, engine.BrowseParams{Limit: exportPage, Cursor: cursor})
		if err != nil {
			return QueueJSON{}, goneOr(err)
		}
		for _, m := range page.Messages {
			qj.Messages = append(qj.Messages, stateMessage(m, page.Now))
		}
		if page.Next == "" {
			return qj, nil
		}
		cursor = page.Next
	}
}

func goneOr(err error) error {
	var e *baton.Error
	if errors.As(err, &e) && e.Code == baton.ErrQueueDoesNotExist {
		return errGone
	}
	return err
}

func stateMessage(m *baton.Message, now time.Time) StateMessageJSON {
	j := StateMessageJSON{
		MessageID: m.ID, Body: m.Body, MessageGroupID: m.GroupID, MessageDeduplicationID: m.DedupID,
		TraceHeader: m.TraceHeader, SenderID: m.SenderID, DeadLetterSourceARN: m.DeadLetterSourceARN,
		State: m.StateAt(now).String(), SentAt: m.SentAt.UTC(), VisibleAt: m.VisibleAt.UTC(),
		ReceiveCount: m.ReceiveCount, Lease: m.Epoch,
	}
	if !m.FirstReceivedAt.IsZero() {
		j.FirstReceivedAt = m.FirstReceivedAt.UTC()
	}
	if !utf8.ValidString(m.Body) {
		j.Body, j.BodyBase64 = base64.StdEncoding.EncodeToString([]byte(m.Body)), true
	}
	if len(m.Attributes) > 0 {
		j.MessageAttributes = make(map[string]MessageAttributeJSON, len(m.Attributes))
		for name, a := range m.Attributes {
			j.MessageAttributes[name] = MessageAttributeJSON{DataType: a.DataType, StringValue: a.StringValue, BinaryValue: a.BinaryValue}
		}
	}
	return j
}

// ReadState decodes an export, refusing another format and unknown fields.
func ReadState(r io.Reader) (*StateJSON, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var st StateJSON
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("not a Baton export: %w", err)
	}
	if st.Format != StateFormat {
		return nil, fmt.Errorf("export format %d: this server reads format %d", st.Format, StateFormat)
	}
	return &st, nil
}

// ReadStateFile reads an export from a file.
func ReadStateFile(path string) (*StateJSON, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := ReadState(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// ErrStateQueueExists is wrapped by ImportState's refusal of a queue that
// already exists.
var ErrStateQueueExists = errors.New("queue already exists")

// ImportState loads an export into the account: it creates every queue of
// the file, first without the attributes naming other queues, which it then
// sets, and stores their messages; then the file's topics and their
// subscriptions through svc. It refuses, before creating anything, if a
// queue or topic of the file exists, and a file with topics when svc is
// nil. It returns how many messages it stored.
func ImportState(ctx context.Context, eng *engine.Engine, svc *sns.Service, account string, st *StateJSON) (int, error) {
	topics, err := checkTopicImport(ctx, svc, account, st.Topics)
	if err != nil {
		return 0, err
	}
	for _, q := range st.Queues {
		_, err := eng.GetQueue(ctx, stateRef(q, account))
		if err == nil {
			return 0, fmt.Errorf("%w: %s (reset first)", ErrStateQueueExists, q.Name)
		}
		if !errors.Is(goneOr(err), errGone) {
			return 0, err
		}
	}
	for _, q := range st.Queues {
		attrs := maps.Clone(q.Attributes)
		for _, a := range linkAttributes {
			delete(attrs, a)
		}
		if _, err := eng.CreateQueue(ctx, engine.CreateQueueParams{Region: q.Region, Account: account, Name: q.Name, Attributes: attrs, Tags: q.Tags}); err != nil {
			return 0, fmt.Errorf("create queue %s: %w", q.Name, err)
		}
	}
	n := 0
	for _, q := range st.Queues {
		links := map[string]string{}
		for _, a := range linkAttributes {
			if v, ok := q.Attributes[a]; ok {
				links[a] = v
			}
		}
		ref := stateRef(q, account)
		if len(links) > 0 {
			if err := eng.SetQueueAttributes(ctx, ref, links); err != nil {
				return n, fmt.Errorf("queue %s: %w", q.Name, err)
			}
		}
		msgs, err := importMessages(q.Messages)
		if err != nil {
			return n, fmt.Errorf("queue %s: %w", q.Name, err)
		}
		if err := eng.ImportMessages(ctx, ref, msgs); err != nil {
			return n, fmt.Errorf("queue %s: %w", q.Name, err)
		}
		n += len(msgs)
	}
	if len(topics) > 0 {
		if err := svc.ImportTopics(ctx, account, topics); err != nil {
			return n, err
		}
	}
	return n, nil
}

func stateRef(q QueueJSON, account string) engine.QueueRef {
	return engine.QueueRef{Region: q.Region, Account: account, Name: q.Name}
}

// importMessages turns exported messages into the engine's, oldest first.
func importMessages(in []StateMessageJSON) ([]*baton.Message, error) {
	in = slices.Clone(in)
	slices.SortStableFunc(in, func(a, b StateMessageJSON) int { return a.SentAt.Compare(b.SentAt) })
	out := make([]*baton.Message, len(in))
	for i, j := range in {
		m := &baton.Message{
			ID: j.MessageID, Body: j.Body, GroupID: j.MessageGroupID, DedupID: j.MessageDeduplicationID,
			TraceHeader: j.TraceHeader, SenderID: j.SenderID, DeadLetterSourceARN: j.DeadLetterSourceARN,
			SentAt: j.SentAt, VisibleAt: j.VisibleAt, ReceiveCount: j.ReceiveCount, FirstReceivedAt: j.FirstReceivedAt, Epoch: j.Lease,
		}
		switch j.State {
		case "", "visible", "delayed":
		case "inflight":
			m.Leased = true
		default:
			return nil, fmt.Errorf("message %d: state %q: want visible, inflight or delayed", i+1, j.State)
		}
		if j.BodyBase64 {
			b, err := base64.StdEncoding.DecodeString(j.Body)
			if err != nil {
				return nil, fmt.Errorf("message %d: body_base64: %w", i+1, err)
			}
			m.Body = string(b)
		}
		if len(j.MessageAttributes) > 0 {
			m.Attributes = make(map[string]baton.MessageAttribute, len(j.MessageAttributes))
			for name, a := range j.MessageAttributes {
				m.Attributes[name] = baton.MessageAttribute{DataType: a.DataType, StringValue: a.StringValue, BinaryValue: a.BinaryValue}
			}
		}
		out[i] = m
	}
	return out, nil
}
