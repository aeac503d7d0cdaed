package pgstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// TestLeaseRoundLooksUpNoQueue: a round of deletes and visibility changes
// is their lease statements alone; it does not look their queues up (a
// message found proves its queue exists, and lease asks only when none
// was found). The lookup was one more statement per round, and
// PostgreSQL planned it anew on most runs.
func TestLeaseRoundLooksUpNoQueue(t *testing.T) {
	t.Parallel()
	now := time.Now()
	del := &op{kind: opDelete, queueID: 7, now: now, entries: []leaseEntry{{MessageID: "a", Epoch: 1}, {MessageID: "b", Epoch: 1}}}
	chg := &op{kind: opChange, queueID: 8, now: now, entries: []leaseEntry{{MessageID: "c", Epoch: 1, VisibleAt: now}}}
	b := (&Store{}).roundBatch([]*op{del, chg})
	if b.Len() != 2 {
		t.Errorf("the round has %d statements, want 2 (a delete and a change)", b.Len())
	}
	for _, q := range b.QueuedQueries {
		if strings.Contains(q.SQL, "baton_queues") {
			t.Errorf("the round reads baton_queues: %s", strings.Join(strings.Fields(q.SQL), " "))
		}
	}
}

// TestLeaseFindingNothingAsksForQueue: deletes and changes whose receipts
// find no message answer each LeaseGone while their queue exists, and
// ErrNotFound once it is deleted.
func TestLeaseFindingNothingAsksForQueue(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	qid := mustQueue(t, s, "lease-nothing", false)
	now := time.Now()
	sendN(t, s, qid, "m", 1, now)
	gone := []baton.LeaseRef{{MessageID: "never-sent", Epoch: 1}, {MessageID: "nor-this", Epoch: 1}}
	outs, err := s.MessageDeleteBatch(ctx, baton.MessageDeleteBatchParams{QueueID: qid, Now: now, Entries: gone})
	if err != nil || len(outs) != 2 || outs[0].Result != baton.LeaseGone || outs[1].Result != baton.LeaseGone {
		t.Fatalf("delete of messages never sent = %+v, %v; want LeaseGone twice", outs, err)
	}
	chgs := []baton.VisibilityChange{{MessageID: "never-sent", Epoch: 1, VisibleAt: now}}
	outs, err = s.MessageChangeVisibilityBatch(ctx, baton.MessageChangeVisibilityBatchParams{QueueID: qid, Now: now, Entries: chgs})
	if err != nil || len(outs) != 1 || outs[0].Result != baton.LeaseGone {
		t.Fatalf("change of a message never sent = %+v, %v; want LeaseGone", outs, err)
	}

	if err := s.QueueDelete(ctx, "us-east-1", "000000000000", "lease-nothing", now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MessageDeleteBatch(ctx, baton.MessageDeleteBatchParams{QueueID: qid, Now: now, Entries: gone}); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("delete in the deleted queue: %v, want ErrNotFound", err)
	}
	if _, err := s.MessageChangeVisibilityBatch(ctx, baton.MessageChangeVisibilityBatchParams{QueueID: qid, Now: now, Entries: chgs}); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("change in the deleted queue: %v, want ErrNotFound", err)
	}
	if _, err := s.MessageDelete(ctx, baton.MessageDeleteParams{QueueID: qid, Now: now, MessageID: "m-0", Epoch: 1}); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("delete of a message of the deleted queue: %v, want ErrNotFound", err)
	}
}
