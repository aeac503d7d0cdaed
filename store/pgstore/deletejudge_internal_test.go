package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// TestDeleteJudgesTheNewestLease: a delete whose messages another
// transaction is leasing again waits for it, and judges each receipt on the
// lease that transaction committed, not on the one the delete's snapshot
// saw: its receipt's lease is not live (LeaseLapsed: the store does not
// tell a lapsed lease from a superseded one); a delete that requires a live
// lease keeps the message and answers with its new lease, one that does
// not deletes it and answers with the version it deleted (deleteManySQL).
func TestDeleteJudgesTheNewestLease(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	qid := mustQueue(t, s, "delete-judge", false)
	now := time.Now()
	sent := sendN(t, s, qid, "m", 2, now)
	epochs := receiveAll(t, s, qid, now)

	// Another round leases both again (their leases lapsed), uncommitted.
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `UPDATE baton_messages SET epoch = epoch + 1, receive_count = receive_count + 1,
		visible_at = $2 WHERE queue_id = $1`, int64(qid), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}

	type result struct {
		out baton.LeaseOutcome
		err error
	}
	done := make(chan result, 2)
	for i, requireLive := range []bool{true, false} {
		go func() {
			out, err := s.MessageDelete(ctx, baton.MessageDeleteParams{QueueID: qid, MessageID: sent[i].ID,
				Epoch: epochs[sent[i].ID], Now: now, RequireLive: requireLive})
			done <- result{out, err}
		}()
	}
	waitForLockWaiter(t, s)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]result{}
	for range 2 {
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		got[r.out.Message.ID] = r
	}
	for i, m := range sent {
		out := got[m.ID].out
		if out.Result != baton.LeaseLapsed || out.Message.Epoch != epochs[m.ID]+1 || out.Message.ReceiveCount != 2 {
			t.Errorf("delete (require live %v): %v, epoch %d, count %d; want lapsed (the store says no more), the lease of epoch %d, count 2",
				i == 0, out.Result, out.Message.Epoch, out.Message.ReceiveCount, epochs[m.ID]+1)
		}
	}
	var left []string
	rows, err := s.pool.Query(ctx, `SELECT id FROM baton_messages WHERE queue_id = $1 ORDER BY id`, int64(qid))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		left = append(left, id)
	}
	if rows.Err() != nil || len(left) != 1 || left[0] != sent[0].ID {
		t.Errorf("messages left %v (%v), want %s alone: the delete that requires a live lease keeps it", left, rows.Err(), sent[0].ID)
	}
}

// waitForLockWaiter waits until a backend of s waits for a lock, for up to
// a minute.
func waitForLockWaiter(t *testing.T, s *Store) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var n int
		if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
	}
	t.Fatal("no delete waited for the lease's transaction within a minute")
}
