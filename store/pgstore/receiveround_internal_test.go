package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// TestGroupSharesReceives: concurrent receives from one standard queue run
// in one round, and the round hands each its own messages: none twice,
// each receive at most its maximum and a run of consecutive messages, the
// earliest sent first, each leased until its own receive's lease end.
func TestGroupSharesReceives(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	qid := mustQueue(t, s, "shared-receives", false)
	now := time.Now().Truncate(time.Millisecond)
	sendN(t, s, qid, "m", 25, now)

	const receivers, max = 4, 5
	var mu sync.Mutex
	got := map[int][]*baton.Message{}
	var calls []func()
	for i := range receivers {
		calls = append(calls, func() {
			msgs, err := s.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: qid, Now: now, Max: max,
				VisibleAt: now.Add(time.Duration(i+1) * time.Minute), RetentionCutoff: now.Add(-time.Hour)})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			got[i] = msgs
			mu.Unlock()
		})
	}
	if rounds := inOneRound(t, s, calls...); rounds != 1 {
		t.Fatalf("%d concurrent receives ran in %d rounds, want 1", receivers, rounds)
	}
	seen := map[string]bool{}
	for i, msgs := range got {
		if len(msgs) != max {
			t.Errorf("receive %d got %d messages, want %d", i, len(msgs), max)
			continue
		}
		first := sentIndex(t, msgs[0])
		for j, m := range msgs {
			if seen[m.ID] {
				t.Errorf("%s leased twice", m.ID)
			}
			seen[m.ID] = true
			if n := sentIndex(t, m); n != first+j {
				t.Errorf("receive %d got %s at %d, after m-%d: not a run of consecutive messages", i, m.ID, j, first)
			}
			if want := now.Add(time.Duration(i+1) * time.Minute); !m.VisibleAt.Equal(want) || !m.Leased || m.ReceiveCount != 1 {
				t.Errorf("receive %d: %s leased %v until %v (count %d), want until %v", i, m.ID, m.Leased, m.VisibleAt, m.ReceiveCount, want)
			}
		}
	}
	for n := range receivers * max {
		if id := fmt.Sprintf("m-%d", n); !seen[id] {
			t.Errorf("%s, among the %d sent first, was not received", id, receivers*max)
		}
	}
}

// TestGroupReceivesShareFewMessages: concurrent receives that ask for more
// than the queue holds get every message between them, once.
func TestGroupReceivesShareFewMessages(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	qid := mustQueue(t, s, "few-messages", false)
	now := time.Now()
	sendN(t, s, qid, "m", 12, now)
	var mu sync.Mutex
	seen := map[string]int{}
	var calls []func()
	for range 3 {
		calls = append(calls, func() {
			msgs, err := s.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: qid, Now: now, Max: 10,
				VisibleAt: now.Add(time.Minute), RetentionCutoff: now.Add(-time.Hour)})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			for _, m := range msgs {
				seen[m.ID]++
			}
			mu.Unlock()
		})
	}
	if rounds := inOneRound(t, s, calls...); rounds != 1 {
		t.Fatalf("3 concurrent receives ran in %d rounds, want 1", rounds)
	}
	if len(seen) != 12 {
		t.Errorf("received %d distinct messages of 12: %v", len(seen), seen)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s received %d times", id, n)
		}
	}
}

// sentIndex is n of a message sendN named m-n.
func sentIndex(t *testing.T, m *baton.Message) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimPrefix(m.ID, "m-"))
	if err != nil {
		t.Fatalf("message %q", m.ID)
	}
	return n
}

// TestPlainReceiveOneRoundTrip: a receive from a standard queue without
// message groups is one round trip, its round's, which reads the queue's
// kind itself; a receive from a queue with message groups, or from one
// deleted, still gets the answer its queue's kind gives.
func TestPlainReceiveOneRoundTrip(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	qid := mustQueue(t, s, "one-round-trip", false)
	now := time.Now().Truncate(time.Millisecond)
	sendN(t, s, qid, "m", 3, now)
	receive := func() ([]*baton.Message, error) {
		return s.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: qid, Now: now, Max: 1,
			VisibleAt: now.Add(time.Minute), RetentionCutoff: now.Add(-time.Hour)})
	}
	if _, err := receive(); err != nil { // learns that the queue is not FIFO, once
		t.Fatal(err)
	}
	before := s.pool.Stat().AcquireCount()
	got, err := receive()
	if err != nil {
		t.Fatal(err)
	}
	if n := s.pool.Stat().AcquireCount() - before; n != 1 {
		t.Errorf("a receive took %d connections from the pool, want 1 (its round's)", n)
	}
	if len(got) != 1 || got[0].ID != "m-1" {
		t.Errorf("second receive got %v, want m-1", got)
	}

	// A message with a group id: the fair receive, which takes the oldest
	// of each group first (m-2 of group "", then g-0).
	grouped := testMessage("g-0", now)
	grouped.GroupID = "tenant"
	if _, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: qid, Messages: []*baton.Message{grouped}}); err != nil {
		t.Fatal(err)
	}
	got, err = s.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: qid, Now: now, Max: 2,
		VisibleAt: now.Add(time.Minute), RetentionCutoff: now.Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, m := range got {
		ids[m.ID] = true
	}
	if len(got) != 2 || !ids["m-2"] || !ids["g-0"] {
		t.Errorf("receive from a queue with groups got %v, want m-2 and g-0", got)
	}

	if err := s.QueueDelete(ctx, "us-east-1", "000000000000", "one-round-trip", now); err != nil {
		t.Fatal(err)
	}
	if _, err := receive(); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("receive from a deleted queue: %v, want ErrNotFound", err)
	}
}
