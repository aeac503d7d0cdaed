package server

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
)

// Browsing a queue's messages without receiving them: nothing
// about a listed message changes, neither its lease nor its receive count,
// and the lease ledger records nothing.
//
//	GET /admin/api/queues/{name}/messages?order=newest|oldest&state=visible,inflight,delayed&contains=TEXT&limit=N&cursor=C
//
// order defaults to newest; state (one or several, comma-separated or
// repeated) to every state; limit to 50, at most 1,000. The answer's
// next_cursor, passed back as cursor, continues the listing in the same
// order and with the same filters; it is absent at the end.

// defaultBrowseLimit is a page's length when the request names none.
const defaultBrowseLimit = 50

// BrowsedMessageJSON is one message as the browse lists it. Body is the
// body as text, or in base64 with BodyBase64 set when it is not valid
// UTF-8. Attributes are the system attributes as ReceiveMessage names
// them. LeaseDeadline is set while the message is in flight, VisibleAt
// while it is delayed.
type BrowsedMessageJSON struct {
	MessageID         string                          `json:"message_id"`
	Body              string                          `json:"body"`
	BodyBase64        bool                            `json:"body_base64,omitempty"`
	MD5OfBody         string                          `json:"md5_of_body"`
	MessageAttributes map[string]MessageAttributeJSON `json:"message_attributes"`
	Attributes        map[string]string               `json:"attributes"`
	State             string                          `json:"state"`
	LeaseDeadline     *time.Time                      `json:"lease_deadline,omitempty"`
	VisibleAt         *time.Time                      `json:"visible_at,omitempty"`
	Lease             uint32                          `json:"lease,omitempty"`
	ReceiveCount      int                             `json:"receive_count"`
	SentAt            time.Time                       `json:"sent_at"`
}

// MessageAttributeJSON is a message attribute: a string value, or a
// binary one in base64.
type MessageAttributeJSON struct {
	DataType    string `json:"data_type"`
	StringValue string `json:"string_value,omitempty"`
	BinaryValue []byte `json:"binary_value,omitempty"`
}

// BrowseJSON is a page of a queue's messages.
type BrowseJSON struct {
	Now        time.Time            `json:"now"`
	Queue      string               `json:"queue"`
	Order      string               `json:"order"`
	Messages   []BrowsedMessageJSON `json:"messages"`
	NextCursor string               `json:"next_cursor,omitempty"`
}

func (s *Server) adminBrowse(w http.ResponseWriter, r *http.Request) {
	ref := s.adminRef(r)
	p, err := browseParams(r)
	if err != nil {
		s.adminError(w, err)
		return
	}
	page, err := s.engine.BrowseMessages(r.Context(), ref, p)
	if err != nil {
		s.adminError(w, err)
		return
	}
	out := BrowseJSON{Now: page.Now.UTC(), Queue: ref.Name, Order: "oldest", NextCursor: page.Next,
		Messages: make([]BrowsedMessageJSON, len(page.Messages))}
	if p.Newest {
		out.Order = "newest"
	}
	for i, m := range page.Messages {
		out.Messages[i] = browsedJSON(m, page.Now)
	}
	writeJSON(w, out)
}

// browseParams reads a browse's query parameters.
func browseParams(r *http.Request) (engine.BrowseParams, error) {
	q := r.URL.Query()
	p := engine.BrowseParams{Newest: true, Limit: defaultBrowseLimit, Cursor: q.Get("cursor"), BodyContains: q.Get("contains")}
	switch o := q.Get("order"); o {
	case "", "newest":
	case "oldest":
		p.Newest = false
	default:
		return p, baton.InvalidParameter("order", o, "Must be newest or oldest.")
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > engine.MaxBrowseLimit {
			return p, baton.InvalidParameter("limit", l, "Must be a whole number from 1 to "+strconv.Itoa(engine.MaxBrowseLimit)+".")
		}
		p.Limit = n
	}
	for _, v := range q["state"] {
		for _, name := range strings.Split(v, ",") {
			st, ok := baton.ParseMessageState(strings.TrimSpace(name))
			if !ok {
				return p, baton.InvalidParameter("state", name, "Must be visible, inflight or delayed.")
			}
			p.States |= st
		}
	}
	return p, nil
}

func browsedJSON(m *baton.Message, now time.Time) BrowsedMessageJSON {
	st := m.StateAt(now)
	j := BrowsedMessageJSON{
		MessageID: m.ID, Body: m.Body, MD5OfBody: m.BodyMD5, State: st.String(),
		ReceiveCount: m.ReceiveCount, SentAt: m.SentAt.UTC(), Lease: m.Epoch,
		MessageAttributes: make(map[string]MessageAttributeJSON, len(m.Attributes)),
	}
	if !utf8.ValidString(m.Body) {
		j.Body, j.BodyBase64 = base64.StdEncoding.EncodeToString([]byte(m.Body)), true
	}
	if j.MD5OfBody == "" {
		j.MD5OfBody = engine.MD5OfBody(m.Body)
	}
	switch st {
	case baton.StateInFlight:
		d := m.VisibleAt.UTC()
		j.LeaseDeadline = &d
	case baton.StateDelayed:
		v := m.VisibleAt.UTC()
		j.VisibleAt = &v
	}
	for name, a := range m.Attributes {
		j.MessageAttributes[name] = MessageAttributeJSON{DataType: a.DataType, StringValue: a.StringValue, BinaryValue: a.BinaryValue}
	}
	j.Attributes = engine.SystemAttributes(m)
	return j
}

// The actions on what a browse lists, and on queues, that the dashboard's
// other actions (admin_actions.go) lack. Each takes a JSON body, like
// those, under the same cross-site checks.
//
//	POST /admin/api/queues                               {"name", "attributes"} → {"name", "url"}
//	POST /admin/api/queues/{name}/delete                 {} → {"deleted": true}
//	POST /admin/api/queues/{name}/messages/{id}/delete   {} → {"deleted": true}; whatever its lease
//	POST /admin/api/queues/{name}/messages/{id}/release  {"lease"} → {"released": true}; that lease, in flight, ends now
//	POST /admin/api/queues/{name}/messages/{id}/move     {"destination_queue"} → {"moved": true}; to a queue of the same type

// CreateQueueActionJSON is the body of the create action.
type CreateQueueActionJSON struct {
	Name       string            `json:"name"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

func (s *Server) actionCreateQueue(w http.ResponseWriter, r *http.Request) error {
	var in CreateQueueActionJSON
	if err := decodeAction(r, &in); err != nil {
		return err
	}
	if in.Name == "" {
		return baton.MissingParameter("name")
	}
	ref := s.adminRef(r)
	q, err := s.engine.CreateQueue(r.Context(), engine.CreateQueueParams{Region: ref.Region, Account: ref.Account, Name: in.Name, Attributes: in.Attributes})
	if err != nil {
		return err
	}
	writeJSON(w, map[string]string{"name": q.Name, "arn": s.engine.QueueARN(q)})
	return nil
}

func (s *Server) actionDeleteQueue(w http.ResponseWriter, r *http.Request) error {
	var in struct{}
	if err := decodeAction(r, &in); err != nil {
		return err
	}
	if err := s.engine.DeleteQueue(r.Context(), s.adminRef(r)); err != nil {
		return err
	}
	writeJSON(w, map[string]bool{"deleted": true})
	return nil
}

func (s *Server) actionDeleteMessage(w http.ResponseWriter, r *http.Request) error {
	var in struct{}
	if err := decodeAction(r, &in); err != nil {
		return err
	}
	if err := s.engine.DeleteMessageByID(r.Context(), s.adminRef(r), r.PathValue("id")); err != nil {
		return err
	}
	writeJSON(w, map[string]bool{"deleted": true})
	return nil
}

// ReleaseActionJSON is the body of the release action: the lease (as the
// browse lists it) to end.
type ReleaseActionJSON struct {
	Lease *uint32 `json:"lease"`
}

func (s *Server) actionReleaseMessage(w http.ResponseWriter, r *http.Request) error {
	var in ReleaseActionJSON
	if err := decodeAction(r, &in); err != nil {
		return err
	}
	if in.Lease == nil {
		return baton.MissingParameter("lease")
	}
	if err := s.engine.ReleaseMessageByID(r.Context(), s.adminRef(r), r.PathValue("id"), *in.Lease); err != nil {
		return err
	}
	writeJSON(w, map[string]bool{"released": true})
	return nil
}

// MoveActionJSON is the body of the move action.
type MoveActionJSON struct {
	DestinationQueue string `json:"destination_queue"`
}

func (s *Server) actionMoveMessage(w http.ResponseWriter, r *http.Request) error {
	var in MoveActionJSON
	if err := decodeAction(r, &in); err != nil {
		return err
	}
	ref := s.adminRef(r)
	to := ref // a queue of the same region and account
	to.Name = in.DestinationQueue
	if err := s.engine.MoveMessageByID(r.Context(), ref, r.PathValue("id"), to); err != nil {
		return err
	}
	writeJSON(w, map[string]bool{"moved": true})
	return nil
}
