package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// openListening opens a store on the database at url whose queue rows age
// by now, and starts its listener (as an engine's subscription does),
// returning once it listens.
func openListening(t *testing.T, url string, now clock.Clock) *Store {
	t.Helper()
	s, err := Open(context.Background(), url, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.Subscribe(func(uint64) {})
	select {
	case <-s.Listening():
	case <-time.After(30 * time.Second):
		t.Fatal("the store's listener did not listen within 30s")
	}
	return s
}

// acquiresOf returns how many connections f took from s's pool.
func acquiresOf(s *Store, f func()) int64 {
	before := s.pool.Stat().AcquireCount()
	f()
	return s.pool.Stat().AcquireCount() - before
}

// visibilityOf returns the queue's VisibilityTimeout as s reads it.
func visibilityOf(t *testing.T, s *Store, name string) int {
	t.Helper()
	q, err := s.QueueGet(context.Background(), "us-east-1", "000000000000", name)
	if err != nil {
		t.Fatal(err)
	}
	return q.Attributes.VisibilityTimeout
}

// setVisibility sets the queue's VisibilityTimeout through s.
func setVisibility(t *testing.T, s *Store, name string, v int) {
	t.Helper()
	_, err := s.QueueUpdate(context.Background(), baton.QueueUpdateParams{Region: "us-east-1", Account: "000000000000", Name: name,
		Attributes: &baton.QueueAttributes{VisibilityTimeout: v}, ModifiedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
}

// setVisibilityUnheard changes the queue's row behind every store's back:
// no notification, as when one is lost.
func setVisibilityUnheard(t *testing.T, s *Store, name string, v int) {
	t.Helper()
	_, err := s.pool.Exec(context.Background(), `UPDATE baton_queues SET attributes = $2 WHERE name = $1`,
		name, encodeQueueAttributes(baton.QueueAttributes{VisibilityTimeout: v}))
	if err != nil {
		t.Fatal(err)
	}
}

// TestQueueGetKept: while its listener listens, a store reads a queue's
// row once and answers from it for queueCacheTTL, by its clock; a change
// it makes itself is seen at once; a fresh read (baton.Fresh) reads.
func TestQueueGetKept(t *testing.T) {
	t.Parallel()
	now := clock.NewFake(time.Now())
	s := openListening(t, pgtest.MustDatabase(t), now)
	mustQueue(t, s, "kept", false)
	visibilityOf(t, s, "kept")
	if n := acquiresOf(s, func() {
		for range 10 {
			visibilityOf(t, s, "kept")
		}
	}); n != 0 {
		t.Errorf("10 reads of a queue read a moment before took %d connections from the pool, want 0", n)
	}

	setVisibility(t, s, "kept", 45)
	if v := visibilityOf(t, s, "kept"); v != 45 {
		t.Errorf("after its own change the store reads VisibilityTimeout %d, want 45", v)
	}

	setVisibilityUnheard(t, s, "kept", 50)
	if v := visibilityOf(t, s, "kept"); v != 45 {
		t.Fatalf("a row read a moment before: VisibilityTimeout %d, want 45 (kept)", v)
	}
	q, err := s.QueueGet(baton.Fresh(context.Background()), "us-east-1", "000000000000", "kept")
	if err != nil || q.Attributes.VisibilityTimeout != 50 {
		t.Errorf("a fresh read: %+v, %v; want VisibilityTimeout 50", q, err)
	}
	setVisibilityUnheard(t, s, "kept", 55)
	now.Advance(queueCacheTTL)
	if v := visibilityOf(t, s, "kept"); v != 55 {
		t.Errorf("once the row kept expired the store reads VisibilityTimeout %d, want 55", v)
	}

	// Not found is not kept.
	if _, err := s.QueueGet(context.Background(), "us-east-1", "000000000000", "later"); !errors.Is(err, baton.ErrNotFound) {
		t.Fatalf("a queue not yet created: %v, want ErrNotFound", err)
	}
	if n := acquiresOf(s, func() {
		if _, err := s.QueueGet(context.Background(), "us-east-1", "000000000000", "later"); !errors.Is(err, baton.ErrNotFound) {
			t.Fatalf("a queue not yet created: %v, want ErrNotFound", err)
		}
	}); n != 1 {
		t.Errorf("a queue found missing a moment before took %d connections to read again, want 1", n)
	}
}

// TestQueueGetNotKeptWithoutListener: a store whose listener does not
// listen could miss other servers' changes, and reads the row for every
// request.
func TestQueueGetNotKeptWithoutListener(t *testing.T) {
	t.Parallel()
	s := openStore(t) // no subscriber: no listener
	mustQueue(t, s, "unheard", false)
	if n := acquiresOf(s, func() {
		for range 3 {
			visibilityOf(t, s, "unheard")
		}
	}); n != 3 {
		t.Errorf("3 reads took %d connections from the pool, want 3", n)
	}
}

// TestQueueChangeHeardByOtherServer: a change made through one server is
// seen promptly through another that kept the row, whose clock does not
// move (its rows never expire): the change's notification drops the row.
// So do a purge's, a creation's and a deletion's.
func TestQueueChangeHeardByOtherServer(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	a := openListening(t, url, clock.System{})
	b := openListening(t, url, clock.NewFake(time.Now()))
	ctx := context.Background()
	mustQueue(t, a, "shared", false)
	if v := visibilityOf(t, b, "shared"); v != 0 {
		t.Fatalf("VisibilityTimeout %d, want 0", v)
	}
	setVisibility(t, a, "shared", 45)
	poll.For(t, 30*time.Second, func() error {
		if v := visibilityOf(t, b, "shared"); v != 45 {
			return fmt.Errorf("the other server reads VisibilityTimeout %d, want 45", v)
		}
		return nil
	})

	// Every change to the queue is heard of: each drops the row kept.
	heard := func(what string, change func()) {
		t.Helper()
		visibilityOf(t, b, "shared") // kept again
		before := b.queues.generation()
		change()
		poll.For(t, 30*time.Second, func() error {
			if b.queues.generation() == before {
				return fmt.Errorf("the other server has not heard of the %s", what)
			}
			return nil
		})
	}
	heard("purge", func() {
		if err := a.QueuePurge(ctx, baton.QueuePurgeParams{Region: "us-east-1", Account: "000000000000", Name: "shared", Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
	})
	heard("tags", func() {
		if _, err := a.QueueUpdate(ctx, baton.QueueUpdateParams{Region: "us-east-1", Account: "000000000000", Name: "shared",
			TagsSet: map[string]string{"team": "blue"}}); err != nil {
			t.Fatal(err)
		}
	})
	heard("creation", func() { mustQueue(t, a, "another", false) })
	heard("deletion", func() {
		if err := a.QueueDelete(ctx, "us-east-1", "000000000000", "shared", time.Now()); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := b.QueueGet(ctx, "us-east-1", "000000000000", "shared"); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("the other server reads a deleted queue: %v, want ErrNotFound", err)
	}
}

// TestKeptQueueDeletedElsewhere: a server still keeping the row of a queue
// another server has deleted (its notification not yet heard) sends,
// receives, deletes and counts against the queue's id: each answers
// ErrNotFound (QueueDoesNotExist) and stores nothing, and the row is
// dropped, so that the next read finds the queue gone.
func TestKeptQueueDeletedElsewhere(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	a := openListening(t, url, clock.System{})
	b := openListening(t, url, clock.NewFake(time.Now()))
	ctx := context.Background()
	qid := mustQueue(t, a, "doomed", false)
	key := queueKey("us-east-1", "000000000000", "doomed")
	stale, err := b.QueueGet(ctx, "us-east-1", "000000000000", "doomed")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.QueueDelete(ctx, "us-east-1", "000000000000", "doomed", time.Now()); err != nil {
		t.Fatal(err)
	}
	// Once the deletion is heard of, keep the row as if it had not been.
	poll.For(t, 30*time.Second, func() error {
		if _, err := b.QueueGet(ctx, "us-east-1", "000000000000", "doomed"); !errors.Is(err, baton.ErrNotFound) {
			return fmt.Errorf("the other server reads the deleted queue: %v", err)
		}
		return nil
	})
	keepStale := func() {
		b.queues.put(key, stale, b.queues.generation())
		if q, err := b.QueueGet(ctx, "us-east-1", "000000000000", "doomed"); err != nil || q.ID != qid {
			t.Fatalf("the row kept: %+v, %v", q, err)
		}
	}
	now := time.Now()
	calls := map[string]func() error{
		"send": func() error {
			_, err := b.MessageSend(ctx, baton.MessageSendParams{QueueID: stale.ID, Messages: []*baton.Message{testMessage("orphan", now)}})
			return err
		},
		"receive": func() error {
			_, err := b.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: stale.ID, Now: now, Max: 1,
				VisibleAt: now.Add(time.Minute), RetentionCutoff: now.Add(-time.Hour)})
			return err
		},
		"delete": func() error {
			_, err := b.MessageDelete(ctx, baton.MessageDeleteParams{QueueID: stale.ID, MessageID: "orphan", Epoch: 1, Now: now})
			return err
		},
		"stats": func() error {
			_, err := b.MessageStats(ctx, baton.MessageStatsParams{QueueID: stale.ID, Now: now})
			return err
		},
		"browse": func() error {
			_, err := b.MessageBrowse(ctx, baton.MessageBrowseParams{QueueID: stale.ID, Now: now, Limit: 10})
			return err
		},
	}
	for what, call := range calls {
		keepStale()
		if err := call(); !errors.Is(err, baton.ErrNotFound) {
			t.Errorf("%s to a queue deleted elsewhere: %v, want ErrNotFound", what, err)
		}
		if _, err := b.QueueGet(ctx, "us-east-1", "000000000000", "doomed"); !errors.Is(err, baton.ErrNotFound) {
			t.Errorf("after a %s found it gone, the queue reads %v, want ErrNotFound", what, err)
		}
	}
	if n := countMessages(t, a, qid); n != 0 {
		t.Errorf("%d messages stored into the deleted queue", n)
	}
}

// TestListenerLostDropsKept: when the listening connection is lost, the
// rows kept are dropped (a change may go unheard meanwhile), and rows are
// kept again, read anew, once it listens again.
func TestListenerLostDropsKept(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	s := openListening(t, url, clock.NewFake(time.Now())) // its rows never expire
	ctx := context.Background()
	mustQueue(t, s, "cut-off", false)
	visibilityOf(t, s, "cut-off")
	setVisibilityUnheard(t, s, "cut-off", 30)
	if v := visibilityOf(t, s, "cut-off"); v != 0 {
		t.Fatalf("VisibilityTimeout %d, want 0 (kept)", v)
	}
	var ended int
	if err := s.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN %'`).Scan(&ended); err != nil || ended != 1 {
		t.Fatalf("ending the listening connection: %d ended, %v; want 1", ended, err)
	}
	// Once it listens again, it keeps rows again, read since: the change
	// made behind its back is seen.
	poll.For(t, 30*time.Second, func() error {
		var v int
		if n := acquiresOf(s, func() { v = visibilityOf(t, s, "cut-off") }); n != 0 {
			return fmt.Errorf("a read took %d connections: no row kept (not listening again yet)", n)
		}
		if v != 30 {
			return fmt.Errorf("VisibilityTimeout %d, want 30: the row kept outlived its listener", v)
		}
		return nil
	})
}

// TestQueueCacheGenerations: a read that began before a drop keeps
// nothing; no row is kept while the listener does not listen.
func TestQueueCacheGenerations(t *testing.T) {
	now := clock.NewFake(time.Now())
	c := &queueCache{clock: now}
	q := &baton.Queue{ID: 7, Name: "q", Tags: map[string]string{"k": "v"}}
	c.put("k", q, c.generation())
	if _, ok := c.get("k"); ok {
		t.Error("a row kept while the listener does not listen")
	}
	c.listening(true)
	gen := c.generation()
	c.drop("other")
	c.put("k", q, gen)
	if _, ok := c.get("k"); ok {
		t.Error("a read that began before a drop kept its row")
	}
	c.put("k", q, c.generation())
	got, ok := c.get("k")
	if !ok || got.ID != 7 {
		t.Fatalf("row kept: %+v, %v", got, ok)
	}
	got.Tags["k"] = "changed"
	if again, _ := c.get("k"); again.Tags["k"] != "v" {
		t.Error("a caller's change to its copy reached the row kept")
	}
	c.dropID(7)
	if _, ok := c.get("k"); ok {
		t.Error("the row of a queue found gone is still kept")
	}
	c.put("k", q, c.generation())
	now.Advance(queueCacheTTL)
	if _, ok := c.get("k"); ok {
		t.Error("a row kept past queueCacheTTL")
	}
	c.put("k", q, c.generation())
	c.listening(false)
	if _, ok := c.get("k"); ok {
		t.Error("a row kept after the listener stopped")
	}
}
