package pgstore

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/pgtest"
)

// openThrough opens a store on url (through PgBouncer), closed when the
// test ends.
func openThrough(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), url, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ConnectTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("open through PgBouncer: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestPgBouncerSessionMode runs two stores, as two servers, through
// PgBouncer in session mode: a send on one wakes the other's subscriber
// (the waker's connection is accepted: it sets no start-up parameter,
// which PgBouncer refuses), the prepared statements of a send, receive and delete work, and a task lock
// is held by one store alone and taken over once released.
func TestPgBouncerSessionMode(t *testing.T) {
	t.Parallel()
	pg := pgtest.MustShared(t)
	url := pg.PgBouncer(t, "session", pgtest.DatabaseName(pg.MustDatabase(t)))
	a, b := openThrough(t, url), openThrough(t, url)
	ctx := context.Background()

	woke := make(chan uint64, 16)
	b.Subscribe(func(id uint64) { woke <- id })
	select {
	case <-b.Listening():
	case <-time.After(30 * time.Second):
		t.Fatal("the store behind PgBouncer never listened")
	}
	qid := mustQueue(t, a, "bounced", false)
	now := time.Now()
	if _, err := a.MessageSend(ctx, baton.MessageSendParams{QueueID: qid, Messages: []*baton.Message{testMessage("b-1", now)}}); err != nil {
		t.Fatalf("send through PgBouncer: %v", err)
	}
	select {
	case id := <-woke:
		if id != qid {
			t.Errorf("woken for queue %d, want %d", id, qid)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a send on one store behind PgBouncer did not wake the other's subscriber within 30s")
	}

	got, err := b.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: qid, Now: now, VisibleAt: now.Add(time.Minute), Max: 10,
		RetentionCutoff: now.Add(-time.Hour)})
	if err != nil || len(got) != 1 {
		t.Fatalf("receive through PgBouncer: %d messages, %v", len(got), err)
	}
	out, err := b.MessageDelete(ctx, baton.MessageDeleteParams{QueueID: qid, MessageID: got[0].ID, Epoch: got[0].Epoch, Now: now})
	if err != nil || out.Result != baton.LeaseCurrent {
		t.Fatalf("delete through PgBouncer: %+v, %v", out, err)
	}

	held, err := a.TaskLock(ctx, "bounced-task")
	if err != nil || held == nil {
		t.Fatalf("task lock through PgBouncer: %v, %v", held, err)
	}
	if other, err := b.TaskLock(ctx, "bounced-task"); err != nil || other != nil {
		t.Fatalf("second holder of a task lock through PgBouncer: %v, %v; want none", other, err)
	}
	held.Release()
	deadline := time.Now().Add(30 * time.Second)
	for {
		taken, err := b.TaskLock(ctx, "bounced-task")
		if err != nil {
			t.Fatal(err)
		}
		if taken != nil {
			taken.Release()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a released task lock was not taken over through PgBouncer within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPgBouncerPooledModesRefused: behind PgBouncer in transaction or
// statement mode, where a connection does not keep its session (LISTEN
// and session advisory locks would silently do nothing), Open refuses to
// start and says why and what to do.
func TestPgBouncerPooledModesRefused(t *testing.T) {
	t.Parallel()
	pg := pgtest.MustShared(t)
	db := pgtest.DatabaseName(pg.MustDatabase(t))
	for _, mode := range []string{"transaction", "statement"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			url := pg.PgBouncer(t, mode, db)
			s, err := Open(context.Background(), url, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ConnectTimeout: 10 * time.Second})
			if err == nil {
				s.Close()
				t.Fatalf("Open through PgBouncer in %s mode succeeded; want it refused", mode)
			}
			if !errors.Is(err, errNoSession) || !strings.Contains(err.Error(), "pool_mode = session") {
				t.Errorf("Open through PgBouncer in %s mode: %v; want the session refusal naming pool_mode = session", mode, err)
			}
			t.Logf("refused: %v", err)
		})
	}
}
