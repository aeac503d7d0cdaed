package pebblestore

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// The writer while commits fail: the callers get the error, the changes
// stay queued, in order, and are written with the next commit that works.
func TestWriterFailingCommits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(t.Context(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	q := &baton.Queue{ID: 1, Region: "us-east-1", Account: "000000000000", Name: "orders", Attributes: baton.DefaultQueueAttributes(), CreatedAt: base, ModifiedAt: base}
	if err := s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: q}); err != nil {
		t.Fatal(err)
	}
	msg := func(n int) *baton.Message {
		return &baton.Message{ID: string(rune('a' + n)), Body: strings.Repeat("x", 64<<10), SentAt: base, VisibleAt: base}
	}
	send := func(n int) error {
		_, err := s.MessageSend(t.Context(), baton.MessageSendParams{QueueID: q.ID, Messages: []*baton.Message{msg(n)}})
		return err
	}
	if err := send(1); err != nil {
		t.Fatalf("send before commits fail: %v", err)
	}
	restore := failCommits(s)
	if err := send(2); !errors.Is(err, errInjected) {
		t.Fatalf("send while commits fail: got %v, want the commit's error", err)
	}
	if s.Stats().Failures == 0 {
		t.Errorf("Stats().Failures = 0 after a failed commit")
	}
	restore()
	if err := send(3); err != nil {
		t.Fatalf("send once commits work: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(t.Context(), dir, Options{}); err != nil {
		t.Fatal(err)
	}
	now := base.Add(time.Second)
	got, err := s.MessageReceive(t.Context(), baton.MessageReceiveParams{QueueID: q.ID, Now: now, Max: 10, VisibleAt: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	// The send that failed may still have happened, as with any error a
	// client gets: here it did, in order.
	if len(got) != 3 {
		t.Errorf("after reopen: got %d messages, want 3", len(got))
	}
	for _, m := range got {
		if len(m.Body) != 64<<10 {
			t.Errorf("message %s: body of %d bytes, want %d", m.ID, len(m.Body), 64<<10)
		}
	}
}
