package baton

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Browsing a queue: Store.MessageBrowse lists a queue's messages as they
// are, without leasing them. Messages are ordered by SentAt, then by ID
// (byte-wise), oldest first or newest first. A page ends with a cursor, the
// position of its last message in that order: the next page starts after
// it, so that messages deleted or received between pages neither shift the
// pages that follow nor make one message appear twice.

// ErrInvalidCursor means a browse cursor was not one MessageBrowse made.
var ErrInvalidCursor = errors.New("invalid browse cursor")

// MessageState is what a message is doing at an instant: visible (it can
// be received), in flight (a receive leased it) or delayed (a delay or a
// lapsed wait before it is visible, without a lease).
type MessageState uint8

// Message states, as bits, so that a browse can select several.
const (
	StateVisible MessageState = 1 << iota
	StateInFlight
	StateDelayed
)

// AllStates selects messages in every state.
const AllStates = StateVisible | StateInFlight | StateDelayed

// String names the state as the admin API does: visible, inflight or
// delayed.
func (s MessageState) String() string {
	switch s {
	case StateVisible:
		return "visible"
	case StateInFlight:
		return "inflight"
	case StateDelayed:
		return "delayed"
	}
	return "MessageState(" + strconv.Itoa(int(s)) + ")"
}

// ParseMessageState reads a state name: visible, inflight (or in_flight,
// in-flight) or delayed.
func ParseMessageState(s string) (MessageState, bool) {
	switch strings.ToLower(s) {
	case "visible":
		return StateVisible, true
	case "inflight", "in_flight", "in-flight":
		return StateInFlight, true
	case "delayed":
		return StateDelayed, true
	}
	return 0, false
}

// StateAt returns the message's state at now (see Message).
func (m *Message) StateAt(now time.Time) MessageState {
	switch {
	case !m.VisibleAt.After(now):
		return StateVisible
	case m.Leased:
		return StateInFlight
	}
	return StateDelayed
}

// MessageBrowseParams are the arguments of Store.MessageBrowse.
type MessageBrowseParams struct {
	QueueID uint64
	// Now is the instant the states are judged at.
	Now time.Time
	// Newest lists the newest messages first; otherwise the oldest come
	// first.
	Newest bool
	// States selects messages by their state at Now; 0 selects all.
	States MessageState
	// BodyContains, if not empty, selects the messages whose body holds
	// it, byte for byte.
	BodyContains string
	// Cursor, if not empty, is a page's Next: the listing continues after
	// it. Its order (Newest) must be the one that made it.
	Cursor string
	// Limit caps the page; at least 1.
	Limit int
}

// MessageBrowsePage is one page of a browse.
type MessageBrowsePage struct {
	// Messages are copies, in the order asked for.
	Messages []*Message
	// Next continues the listing; empty when no message follows.
	Next string
}

// BrowseKey is a message's position in the browse order.
type BrowseKey struct {
	SentAt time.Time
	ID     string
}

// KeyOf returns m's position in the browse order.
func KeyOf(m *Message) BrowseKey { return BrowseKey{SentAt: m.SentAt, ID: m.ID} }

// Compare orders keys oldest first: by SentAt, then ID.
func (k BrowseKey) Compare(o BrowseKey) int {
	if c := k.SentAt.Compare(o.SentAt); c != 0 {
		return c
	}
	return strings.Compare(k.ID, o.ID)
}

// Cursor encodes the key as an opaque, URL-safe cursor.
func (k BrowseKey) Cursor() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(k.SentAt.UnixNano(), 10) + ":" + k.ID))
}

// ParseCursor decodes a cursor Cursor made; ErrInvalidCursor otherwise.
func ParseCursor(c string) (BrowseKey, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return BrowseKey{}, ErrInvalidCursor
	}
	ns, id, ok := strings.Cut(string(b), ":")
	if !ok || id == "" {
		return BrowseKey{}, ErrInvalidCursor
	}
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil {
		return BrowseKey{}, ErrInvalidCursor
	}
	return BrowseKey{SentAt: time.Unix(0, n).UTC(), ID: id}, nil
}
