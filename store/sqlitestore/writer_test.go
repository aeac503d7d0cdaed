package sqlitestore

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// The writer under a full disk: SQLite's max_page_count makes the database
// "full" at its current size.

func TestWriterFullDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(t.Context(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	q := &baton.Queue{ID: 1, Account: "000000000000", Name: "orders", Attributes: baton.DefaultQueueAttributes(), CreatedAt: base, ModifiedAt: base}
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
		t.Fatalf("send before the disk fills: %v", err)
	}

	var pages int
	if err := s.w.conn.QueryRowContext(t.Context(), "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.conn.ExecContext(t.Context(), "PRAGMA max_page_count = "+strconv.Itoa(pages)); err != nil {
		t.Fatal(err)
	}
	err = send(2)
	if err == nil || !strings.Contains(err.Error(), "full") {
		t.Fatalf("send to a full disk: got %v, want an error saying the disk is full", err)
	}
	if s.Stats().Failures == 0 {
		t.Errorf("Stats().Failures = 0 after a failed commit")
	}

	// Space comes back: the failed change is written with the next one.
	if _, err := s.w.conn.ExecContext(t.Context(), "PRAGMA max_page_count = 1000000000"); err != nil {
		t.Fatal(err)
	}
	if err := send(3); err != nil {
		t.Fatalf("send once space is back: %v", err)
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
