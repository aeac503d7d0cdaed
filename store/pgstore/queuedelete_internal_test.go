package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// TestQueueDeleteTakesItsMessages: deleting a queue deletes its messages
// (no foreign key does it since migration 12).
func TestQueueDeleteTakesItsMessages(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	qid := mustQueue(t, s, "doomed", false)
	kept := mustQueue(t, s, "kept", false)
	now := time.Now()
	sendN(t, s, qid, "gone", 3, now)
	sendN(t, s, kept, "kept", 2, now)
	if err := s.QueueDelete(context.Background(), "us-east-1", "000000000000", "doomed", now); err != nil {
		t.Fatal(err)
	}
	if n := countMessages(t, s, qid); n != 0 {
		t.Errorf("%d messages of the deleted queue left", n)
	}
	if n := countMessages(t, s, kept); n != 2 {
		t.Errorf("%d messages of the other queue, want 2", n)
	}
}

// TestQueueDeleteWaitsForSend: a send's transaction that has locked its
// queue and stored a message (a round's sendMessagesSQL) holds off the
// queue's deletion until it commits, and the deletion then takes that
// message too: no message outlives its queue.
func TestQueueDeleteWaitsForSend(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	qid := mustQueue(t, s, "raced", false)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	m := testMessage("in-flight-send", time.Now())
	if _, err := tx.Exec(ctx, sendMessagesSQL, sendArgs(qid, m)...); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.QueueDelete(ctx, "us-east-1", "000000000000", "raced", time.Now()) }()
	poll.For(t, 10*time.Second, func() error {
		var waiting int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == 0 {
			return errors.New("the queue's deletion is not waiting for the send")
		}
		return nil
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := countMessages(t, s, qid); n != 0 {
		t.Errorf("%d messages outlived their queue", n)
	}
}

// TestLockQueuesRefusesMissing: baton_lock_queues fails as the foreign
// key did (isForeignKeyViolation) when one of its queues does not exist.
func TestLockQueuesRefusesMissing(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	qid := mustQueue(t, s, "here", false)
	if _, err := s.pool.Exec(context.Background(), `SELECT baton_lock_queues($1)`, []int64{int64(qid)}); err != nil {
		t.Fatalf("locking an existing queue: %v", err)
	}
	_, err := s.pool.Exec(context.Background(), `SELECT baton_lock_queues($1)`, []int64{int64(qid), int64(qid) + 1})
	if !isForeignKeyViolation(err) {
		t.Errorf("locking a missing queue: %v, want a foreign key violation", err)
	}
}

// sendArgs are sendMessagesSQL's arguments for a send of m alone to queue
// qid.
func sendArgs(qid uint64, m *baton.Message) []any {
	msgs := []*baton.Message{m}
	return append(messageArrays([]int64{int64(qid)}, msgs),
		[]string{sendToken(qid, msgs)}, []time.Time{m.SentAt}, []int64{int64(qid)})
}

// TestSendToMissingQueueStoresNothing: a round's send statement that names
// a queue that does not exist fails as the foreign key did, and neither
// its message nor its token is stored, so that a rerun of the send is not
// taken for one that committed.
func TestSendToMissingQueueStoresNothing(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	qid := mustQueue(t, s, "gone", false)
	if err := s.QueueDelete(ctx, "us-east-1", "000000000000", "gone", time.Now()); err != nil {
		t.Fatal(err)
	}
	m := testMessage("to-nowhere", time.Now())
	_, err := s.pool.Exec(ctx, sendMessagesSQL, sendArgs(qid, m)...)
	if !isForeignKeyViolation(err) {
		t.Fatalf("send to a deleted queue: %v, want a foreign key violation", err)
	}
	var tokens int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM baton_send_tokens`).Scan(&tokens); err != nil {
		t.Fatal(err)
	}
	if n := countMessages(t, s, qid); n != 0 || tokens != 0 {
		t.Errorf("%d messages and %d tokens stored by a send to a deleted queue, want none", n, tokens)
	}
}
