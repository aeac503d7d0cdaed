package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/pgtest"
)

// TestKeptQueueGoneEveryCall: the calls by queue id that a row kept of a
// queue deleted elsewhere leads to, beyond those TestKeptQueueDeletedElsewhere
// covers (a FIFO send with its deduplication keys, visibility changes, batch
// deletes, a move into it, browsing, expiry, a FIFO receive), answer
// ErrNotFound and store nothing: no message, no deduplication key, and the
// message a move would have taken stays where it was.
func TestKeptQueueGoneEveryCall(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	a := openListening(t, url, clock.System{})
	ctx := context.Background()
	qid := mustQueue(t, a, "doomed.fifo", true)
	alive := mustQueue(t, a, "alive", false)
	now := time.Now()
	m := testMessage("m1", now)
	if _, err := a.MessageSend(ctx, baton.MessageSendParams{QueueID: alive, Messages: []*baton.Message{m}}); err != nil {
		t.Fatal(err)
	}
	got, err := a.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: alive, Now: now, Max: 1, VisibleAt: now.Add(time.Minute), RetentionCutoff: now.Add(-time.Hour)})
	if err != nil || len(got) != 1 {
		t.Fatal(got, err)
	}
	if err := a.QueueDelete(ctx, "us-east-1", "000000000000", "doomed.fifo", now); err != nil {
		t.Fatal(err)
	}
	fm := testMessage("f1", now)
	fm.GroupID, fm.DedupID = "g", "d"
	calls := map[string]func() (any, error){
		"fifo send": func() (any, error) {
			return a.MessageSend(ctx, baton.MessageSendParams{QueueID: qid, Messages: []*baton.Message{fm}, DedupKeys: []string{"d"}, DedupCutoff: now.Add(-5 * time.Minute)})
		},
		"change": func() (any, error) {
			return a.MessageChangeVisibility(ctx, baton.MessageChangeVisibilityParams{QueueID: qid, MessageID: "x", Epoch: 1, Now: now, VisibleAt: now})
		},
		"delete batch": func() (any, error) {
			return a.MessageDeleteBatch(ctx, baton.MessageDeleteBatchParams{QueueID: qid, Now: now, Entries: []baton.LeaseRef{{MessageID: "x", Epoch: 1}}})
		},
		"change batch": func() (any, error) {
			return a.MessageChangeVisibilityBatch(ctx, baton.MessageChangeVisibilityBatchParams{QueueID: qid, Now: now, Entries: []baton.VisibilityChange{{MessageID: "x", Epoch: 1, VisibleAt: now}}})
		},
		"move to gone": func() (any, error) {
			return a.MessageMove(ctx, baton.MessageMoveParams{QueueID: alive, MessageID: got[0].ID, Epoch: got[0].Epoch, ToQueueID: qid, Now: now})
		},
		"browse": func() (any, error) {
			return a.MessageBrowse(ctx, baton.MessageBrowseParams{QueueID: qid, Now: now, Limit: 10})
		},
		"expire": func() (any, error) { return a.MessageExpire(ctx, qid, now.Add(-time.Hour)) },
		"receive fifo": func() (any, error) {
			return a.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: qid, Now: now, Max: 1, VisibleAt: now.Add(time.Minute), RetentionCutoff: now.Add(-time.Hour)})
		},
	}
	for what, call := range calls {
		if v, err := call(); !errors.Is(err, baton.ErrNotFound) {
			t.Errorf("%s on a deleted queue: %+v, %v; want ErrNotFound", what, v, err)
		}
	}
	var dedup int
	if err := a.pool.QueryRow(ctx, `SELECT count(*) FROM baton_dedup WHERE queue_id = $1`, int64(qid)).Scan(&dedup); err != nil {
		t.Fatal(err)
	}
	if n := countMessages(t, a, qid); n != 0 || dedup != 0 {
		t.Errorf("the deleted queue has %d messages and %d deduplication keys, want none", n, dedup)
	}
	if n := countMessages(t, a, alive); n != 1 {
		t.Errorf("the queue a move into the deleted one would have taken from has %d messages, want 1", n)
	}
}
