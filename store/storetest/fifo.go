package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// The suite's FIFO and fair-queue tests: how MessageReceive chooses by
// group, and how MessageSend numbers and deduplicates FIFO messages.

// dedupWindow is the engine's deduplication interval; the tests pass
// now-dedupWindow as DedupCutoff, as the engine does.
const dedupWindow = 5 * time.Minute

// NewFIFOQueue returns a FIFO queue of Account with default attributes,
// created at the suite's base time.
func NewFIFOQueue(id uint64, name string) *baton.Queue {
	q := NewQueue(id, name)
	q.Attributes.FifoQueue = true
	q.Attributes.DeduplicationScope = "queue"
	q.Attributes.FifoThroughputLimit = "perQueue"
	q.DedupScope = "queue"
	return q
}

// NewGroupMessage returns message n (see NewMessage) of group, with its
// deduplication id set to its message id.
func NewGroupMessage(n int, group string, sentAt time.Time) *baton.Message {
	m := NewMessage(n, sentAt)
	m.GroupID = group
	m.DedupID = m.ID
	return m
}

// MustSendFIFO stores msgs in a FIFO queue at now, each under its DedupID as
// deduplication key, and fails the test on error.
func MustSendFIFO(tb testing.TB, s baton.Store, queueID uint64, now time.Time, msgs ...*baton.Message) []baton.MessageSent {
	tb.Helper()
	keys := make([]string, len(msgs))
	for i, m := range msgs {
		keys[i] = m.DedupID
	}
	sent, err := s.MessageSend(tb.Context(), baton.MessageSendParams{
		QueueID: queueID, Messages: msgs, DedupKeys: keys, DedupCutoff: now.Add(-dedupWindow),
	})
	if err != nil {
		tb.Fatalf("send %d FIFO messages at %v: %v", len(msgs), now, err)
	}
	if len(sent) != len(msgs) {
		tb.Fatalf("send %d FIFO messages: got %d results", len(msgs), len(sent))
	}
	return sent
}

// mustCreateFIFO creates a FIFO queue numbered n.
func mustCreateFIFO(tb testing.TB, s baton.Store, n int, name string) *baton.Queue {
	tb.Helper()
	q := NewFIFOQueue(QueueID(n), name)
	MustCreateQueue(tb, s, q)
	return q
}

// byGroup splits received messages by group, keeping their order.
func byGroup(msgs []*baton.Message) map[string][]string {
	out := make(map[string][]string)
	for _, m := range msgs {
		out[m.GroupID] = append(out[m.GroupID], m.ID)
	}
	return out
}

// checkOrder compares the ids of msgs with want, in order.
func checkOrder(tb testing.TB, what string, msgs []*baton.Message, want ...string) {
	tb.Helper()
	if got := ids(msgs); !slices.Equal(got, want) {
		tb.Errorf("%s: got ids %v, want %v in this order", what, got, want)
	}
}

// seqLess compares two sequence numbers as the decimal numbers they are.
func seqLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// ---------------------------------------------------------------------------
// FIFO

func testFIFOGroupOrder(t *testing.T, s baton.Store) {
	q := mustCreateFIFO(t, s, 1, "orders.fifo")
	// Interleaved sends: each group's order is its own send order.
	MustSendFIFO(t, s, q.ID, base,
		NewGroupMessage(1, "a", base), NewGroupMessage(2, "b", base), NewGroupMessage(3, "a", base))
	MustSendFIFO(t, s, q.ID, base, NewGroupMessage(4, "b", base), NewGroupMessage(5, "a", base))

	now := at(time.Second)
	msgs := mustReceive(t, s, q.ID, now, now.Add(lease), 10)
	checkIDs(t, "receive everything", msgs, MessageID(1), MessageID(2), MessageID(3), MessageID(4), MessageID(5))
	got := byGroup(msgs)
	if want := []string{MessageID(1), MessageID(3), MessageID(5)}; !slices.Equal(got["a"], want) {
		t.Errorf("group a: got %v, want %v in send order", got["a"], want)
	}
	if want := []string{MessageID(2), MessageID(4)}; !slices.Equal(got["b"], want) {
		t.Errorf("group b: got %v, want %v in send order", got["b"], want)
	}
}

func testFIFOInFlightBlocksGroup(t *testing.T, s baton.Store) {
	q := mustCreateFIFO(t, s, 1, "orders.fifo")
	MustSendFIFO(t, s, q.ID, base, NewGroupMessage(1, "a", base), NewGroupMessage(2, "a", base), NewGroupMessage(3, "a", base))
	checkOrder(t, "receive Max 1", mustReceive(t, s, q.ID, base, at(lease), 1), MessageID(1))

	// With a's head in flight the rest of a waits, even for a big receive;
	// other groups do not.
	now := at(time.Second)
	MustSendFIFO(t, s, q.ID, now, NewGroupMessage(4, "b", now))
	checkOrder(t, "receive while a's head is in flight", mustReceive(t, s, q.ID, now, now.Add(lease), 10), MessageID(4))
	checkStats(t, "stats while a's head is in flight", MustStats(t, s, q.ID, now),
		baton.MessageStats{Visible: 2, InFlight: 2, NextVisibleAt: at(lease)})

	// When the lease lapses the head comes back first, alone.
	checkOrder(t, "receive when the head's lease ends", mustReceive(t, s, q.ID, at(lease), at(2*lease), 1), MessageID(1))
	checkOrder(t, "receive with the head in flight again", mustReceive(t, s, q.ID, at(lease), at(2*lease), 10))

	// Deleting the head releases the rest of the group, in order.
	now = at(lease + 500*time.Millisecond)
	checkResult(t, "delete the head",
		MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: MessageID(1), Epoch: 2, Now: now, RequireLive: true}),
		baton.LeaseCurrent)
	checkOrder(t, "receive after deleting the head", mustReceive(t, s, q.ID, now, now.Add(lease), 10), MessageID(2), MessageID(3))
}

func testFIFOReleasedHeadComesFirst(t *testing.T, s baton.Store) {
	q := mustCreateFIFO(t, s, 1, "orders.fifo")
	MustSendFIFO(t, s, q.ID, base, NewGroupMessage(1, "a", base), NewGroupMessage(2, "a", base))
	checkOrder(t, "receive the head", mustReceive(t, s, q.ID, base, at(lease), 1), MessageID(1))
	now := at(time.Second)
	checkResult(t, "release the head",
		MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: MessageID(1), Epoch: 1, Now: now, VisibleAt: now}),
		baton.LeaseCurrent)
	checkOrder(t, "receive after the release", mustReceive(t, s, q.ID, now, now.Add(lease), 10), MessageID(1), MessageID(2))
}

func testFIFODelayedDoesNotBlock(t *testing.T, s baton.Store) {
	q := mustCreateFIFO(t, s, 1, "orders.fifo")
	delayed := NewGroupMessage(1, "a", base)
	delayed.VisibleAt = at(10 * time.Second)
	MustSendFIFO(t, s, q.ID, base, delayed, NewGroupMessage(2, "a", base))

	// A delayed message nobody received yet holds nothing up.
	checkOrder(t, "receive during the delay", mustReceive(t, s, q.ID, base, at(lease), 10), MessageID(2))
	// Once visible it is received even though the message after it is in
	// flight: it was never received, so it does not jump ahead of a lease.
	checkOrder(t, "receive when the delay ends", mustReceive(t, s, q.ID, at(10*time.Second), at(10*time.Second+lease), 10), MessageID(1))
}

func testFIFOFewestGroups(t *testing.T, s baton.Store) {
	q := mustCreateFIFO(t, s, 1, "orders.fifo")
	var msgs []*baton.Message
	for i, g := range []string{"a", "b", "c", "a", "b", "c", "a", "b", "c"} {
		msgs = append(msgs, NewGroupMessage(i+1, g, base))
	}
	MustSendFIFO(t, s, q.ID, base, msgs...)
	sentOrder := map[string][]string{
		"a": {MessageID(1), MessageID(4), MessageID(7)},
		"b": {MessageID(2), MessageID(5), MessageID(8)},
		"c": {MessageID(3), MessageID(6), MessageID(9)},
	}

	now := at(time.Second)
	got := byGroup(mustReceive(t, s, q.ID, now, now.Add(lease), 4))
	// Four messages from groups of three: one whole group and the head of
	// another, never one or two from each.
	if len(got) != 2 {
		t.Errorf("receive Max 4 from three groups of 3: got groups %v, want 2 groups", got)
	}
	whole := 0
	for g, ids := range got {
		if want := sentOrder[g][:len(ids)]; !slices.Equal(ids, want) {
			t.Errorf("group %s: got %v, want %v (the group's head, in send order)", g, ids, want)
		}
		if len(ids) == 3 {
			whole++
		}
	}
	if whole != 1 {
		t.Errorf("receive Max 4: got %v, want one group whole", got)
	}
}

func testFIFODedup(t *testing.T, s baton.Store) {
	q := mustCreateFIFO(t, s, 1, "orders.fifo")
	orig := NewGroupMessage(1, "a", base)
	orig.DedupID = "key"
	sent := MustSendFIFO(t, s, q.ID, base, orig)
	if sent[0].Duplicate || sent[0].MessageID != orig.ID || sent[0].SequenceNumber == "" {
		t.Fatalf("first send: got %+v, want the message stored with a sequence number", sent[0])
	}

	// Within the window (the key was accepted after the cutoff): the
	// original's id and sequence number, and nothing stored.
	for i, now := range []time.Time{at(time.Minute), base.Add(dedupWindow - time.Millisecond)} {
		dup := NewGroupMessage(10+i, "b", now)
		dup.DedupID = "key"
		got := MustSendFIFO(t, s, q.ID, now, dup)[0]
		if !got.Duplicate || got.MessageID != orig.ID || got.SequenceNumber != sent[0].SequenceNumber {
			t.Errorf("send the key again at %v: got %+v, want a duplicate of %+v", now, got, sent[0])
		}
	}
	now := base.Add(dedupWindow - time.Millisecond)
	checkStats(t, "stats after the duplicates", MustStats(t, s, q.ID, now), baton.MessageStats{Visible: 1})

	// At the cutoff the key is free again.
	now = base.Add(dedupWindow)
	again := NewGroupMessage(20, "a", now)
	again.DedupID = "key"
	got := MustSendFIFO(t, s, q.ID, now, again)[0]
	if got.Duplicate || got.MessageID != again.ID {
		t.Errorf("send the key when its window ends: got %+v, want %s stored", got, again.ID)
	}
	if !seqLess(sent[0].SequenceNumber, got.SequenceNumber) {
		t.Errorf("sequence number after the window: got %s, want more than %s", got.SequenceNumber, sent[0].SequenceNumber)
	}
	// And the new message is now the original.
	later := NewGroupMessage(21, "a", now.Add(time.Second))
	later.DedupID = "key"
	if dup := MustSendFIFO(t, s, q.ID, now.Add(time.Second), later)[0]; !dup.Duplicate || dup.MessageID != again.ID {
		t.Errorf("send the key once more: got %+v, want a duplicate of %s", dup, again.ID)
	}
	checkOrder(t, "receive", mustReceive(t, s, q.ID, now.Add(time.Second), now.Add(time.Second+lease), 10), orig.ID, again.ID)
}

func testFIFODedupWithinOneSend(t *testing.T, s baton.Store) {
	q := mustCreateFIFO(t, s, 1, "orders.fifo")
	a := NewGroupMessage(1, "g", base)
	b := NewGroupMessage(2, "g", base)
	c := NewGroupMessage(3, "g", base)
	a.DedupID, b.DedupID, c.DedupID = "k", "k", "j"
	sent := MustSendFIFO(t, s, q.ID, base, a, b, c)
	if sent[0].Duplicate || sent[0].MessageID != a.ID {
		t.Errorf("first of the call: got %+v, want %s stored", sent[0], a.ID)
	}
	if !sent[1].Duplicate || sent[1].MessageID != a.ID || sent[1].SequenceNumber != sent[0].SequenceNumber {
		t.Errorf("second, same key: got %+v, want a duplicate of %+v", sent[1], sent[0])
	}
	if sent[2].Duplicate || sent[2].MessageID != c.ID || !seqLess(sent[0].SequenceNumber, sent[2].SequenceNumber) {
		t.Errorf("third, another key: got %+v, want %s stored after %s", sent[2], c.ID, sent[0].SequenceNumber)
	}
	checkOrder(t, "receive", mustReceive(t, s, q.ID, base, at(lease), 10), a.ID, c.ID)
}

func testFIFOSequenceNumbers(t *testing.T, s baton.Store) {
	q := mustCreateFIFO(t, s, 1, "orders.fifo")
	other := mustCreateFIFO(t, s, 2, "other.fifo")
	want := make(map[string]string)
	var seqs []string
	n := 0
	for call, size := range []int{1, 3, 1, 10, 2} {
		now := at(time.Duration(call) * time.Second)
		var batch []*baton.Message
		for range size {
			n++
			batch = append(batch, NewGroupMessage(n, fmt.Sprintf("g%d", n%3), now))
		}
		for _, sent := range MustSendFIFO(t, s, q.ID, now, batch...) {
			seqs = append(seqs, sent.SequenceNumber)
			want[sent.MessageID] = sent.SequenceNumber
		}
		// Another queue's sends do not disturb this queue's numbering.
		MustSendFIFO(t, s, other.ID, now, NewGroupMessage(1000+call, "x", now))
	}
	for i := 1; i < len(seqs); i++ {
		if !seqLess(seqs[i-1], seqs[i]) {
			t.Errorf("sequence number %d: %s after %s, want strictly increasing", i, seqs[i], seqs[i-1])
		}
	}
	now := at(time.Minute)
	for _, m := range mustReceive(t, s, q.ID, now, now.Add(lease), 10) {
		if m.SequenceNumber != want[m.ID] {
			t.Errorf("received %s: SequenceNumber %s, want %s as sent", m.ID, m.SequenceNumber, want[m.ID])
		}
	}
}

func testFIFOPurgeClearsDedup(t *testing.T, s baton.Store) {
	q := mustCreateFIFO(t, s, 1, "orders.fifo")
	first := NewGroupMessage(1, "a", base)
	first.DedupID = "key"
	before := MustSendFIFO(t, s, q.ID, base, first)[0]
	now := at(time.Second)
	if err := s.QueuePurge(t.Context(), baton.QueuePurgeParams{Region: Region, Account: Account, Name: q.Name, Now: now, PurgedCutoff: now.Add(-time.Minute)}); err != nil {
		t.Fatalf("purge: %v", err)
	}
	second := NewGroupMessage(2, "a", now)
	second.DedupID = "key"
	after := MustSendFIFO(t, s, q.ID, now, second)[0]
	if after.Duplicate || after.MessageID != second.ID {
		t.Errorf("send the key again after a purge: got %+v, want %s stored", after, second.ID)
	}
	if !seqLess(before.SequenceNumber, after.SequenceNumber) {
		t.Errorf("sequence number after the purge: got %s, want more than %s", after.SequenceNumber, before.SequenceNumber)
	}
	checkOrder(t, "receive after the purge", mustReceive(t, s, q.ID, now, now.Add(lease), 10), second.ID)
}

// ---------------------------------------------------------------------------
// Fair queues (standard queues with message groups)

func testFairRoundRobin(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "tenants")
	// A big backlog of one tenant sent first, then two small ones: in
	// plain send order the backlog would fill every receive.
	var msgs []*baton.Message
	for i := 1; i <= 6; i++ {
		msgs = append(msgs, NewGroupMessage(i, "big", base))
	}
	later := at(time.Millisecond)
	msgs = append(msgs, NewGroupMessage(7, "x", later), NewGroupMessage(8, "y", later),
		NewGroupMessage(9, "x", later), NewGroupMessage(10, "y", later))
	MustSend(t, s, q.ID, msgs...)

	now := at(time.Second)
	for round := 1; round <= 2; round++ {
		got := byGroup(mustReceive(t, s, q.ID, now, now.Add(lease), 3))
		if len(got) != 3 || len(got["big"]) != 1 || len(got["x"]) != 1 || len(got["y"]) != 1 {
			t.Errorf("receive %d with Max 3: got %v, want one message of each group", round, got)
		}
	}
	// The small tenants are served; the backlog takes the rest.
	got := byGroup(mustReceive(t, s, q.ID, now, now.Add(lease), 10))
	if len(got) != 1 || len(got["big"]) != 4 {
		t.Errorf("receive the rest: got %v, want the 4 left of big", got)
	}
}

// testFairUngroupedTenant: a fair queue's messages without a group id are
// one tenant beside the groups, never noisy; the counts take in both kinds.
func testFairUngroupedTenant(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "mixed")
	var msgs []*baton.Message
	for i := 1; i <= 6; i++ {
		msgs = append(msgs, NewMessage(i, base))
	}
	delayed := NewMessage(7, base)
	delayed.VisibleAt = at(time.Hour)
	later := at(time.Millisecond)
	msgs = append(msgs, delayed, NewGroupMessage(8, "x", later), NewGroupMessage(9, "y", later), NewGroupMessage(10, "x", later))
	MustSend(t, s, q.ID, msgs...)

	now := at(time.Second)
	got := byGroup(mustReceive(t, s, q.ID, now, now.Add(lease), 3))
	if len(got) != 3 || len(got[""]) != 1 || len(got["x"]) != 1 || len(got["y"]) != 1 {
		t.Errorf("receive with Max 3: got %v, want one message without a group, one of x, one of y", got)
	}
	if st := MustStats(t, s, q.ID, now); st.Visible != 6 || st.InFlight != 3 || st.Delayed != 1 {
		t.Errorf("stats after the first receive: got %d visible, %d in flight, %d delayed; want 6, 3, 1",
			st.Visible, st.InFlight, st.Delayed)
	}
	got = byGroup(mustReceive(t, s, q.ID, now, now.Add(lease), 10))
	if len(got) != 2 || len(got[""]) != 5 || len(got["x"]) != 1 {
		t.Errorf("receive the rest: got %v, want the 5 visible left without a group and x's second", got)
	}
	if st := MustStats(t, s, q.ID, now); st.Visible != 0 || st.InFlight != 9 || st.Delayed != 1 {
		t.Errorf("stats after the second receive: got %d visible, %d in flight, %d delayed; want 0, 9, 1",
			st.Visible, st.InFlight, st.Delayed)
	}
}

// testFairNoisyTenantWaits: a tenant holding more than a tenth of the
// queue's messages in flight, and at least baton.NoisyTenantInFlight, is
// noisy: a receive gives every quiet tenant's visible messages first, and
// the noisy tenant's only when no quiet one is left.
func testFairNoisyTenantWaits(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "noisy")
	var big []*baton.Message
	for i := 1; i <= 40; i++ {
		big = append(big, NewGroupMessage(i, "big", base))
	}
	MustSend(t, s, q.ID, big...)
	now := at(time.Second)
	if got := mustReceive(t, s, q.ID, now, now.Add(lease), 35); len(got) != 35 {
		t.Fatalf("receive 35 of big: got %d", len(got))
	}
	later := at(2 * time.Second)
	MustSend(t, s, q.ID, NewGroupMessage(41, "x", later), NewGroupMessage(42, "y", later), NewGroupMessage(43, "x", later))
	now = at(3 * time.Second)
	got := byGroup(mustReceive(t, s, q.ID, now, now.Add(lease), 3))
	if len(got) != 2 || len(got["x"]) != 2 || len(got["y"]) != 1 {
		t.Errorf("receive 3 with big holding 35 of 35 in flight: got %v, want x's 2 and y's 1 (big is noisy)", got)
	}
	got = byGroup(mustReceive(t, s, q.ID, now, now.Add(lease), 10))
	if len(got) != 1 || len(got["big"]) != 5 {
		t.Errorf("receive the rest: got %v, want the 5 left of big", got)
	}
}

// testFairNoisyFewestInFlightFirst: of two noisy tenants, a receive serves
// the one with fewer messages in flight first.
func testFairNoisyFewestInFlightFirst(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "two-noisy")
	var a, b []*baton.Message
	for i := 1; i <= 40; i++ {
		a = append(a, NewGroupMessage(i, "a", base))
		b = append(b, NewGroupMessage(100+i, "b", at(2*time.Second)))
	}
	MustSend(t, s, q.ID, a...)
	now := at(time.Second)
	if got := mustReceive(t, s, q.ID, now, now.Add(lease), 38); len(got) != 38 {
		t.Fatalf("receive 38 of a: got %d", len(got))
	}
	MustSend(t, s, q.ID, b...)
	now = at(3 * time.Second)
	// a is noisy (38 of 38 in flight): the quiet b comes first.
	got := byGroup(mustReceive(t, s, q.ID, now, now.Add(lease), 32))
	if len(got) != 1 || len(got["b"]) != 32 {
		t.Fatalf("receive 32 with a noisy: got %v, want 32 of b", got)
	}
	// Both noisy now (38 and 32 of 70 in flight): b has fewer.
	for range 3 {
		got = byGroup(mustReceive(t, s, q.ID, now, now.Add(lease), 1))
		if len(got["b"]) != 1 {
			t.Errorf("receive 1 with a holding 38 and b fewer in flight: got %v, want b", got)
		}
	}
}

// testFIFOExpiredGroupsDoNotHide: groups whose messages are all past
// retention (dropped by the receive) do not stand in the way of a fresh
// message in another group: the first receive returns it, with Max 1 and
// with Max 10, however many expired groups come first.
func testFIFOExpiredGroupsDoNotHide(t *testing.T, s baton.Store) {
	q := mustCreateFIFO(t, s, 1, "orders.fifo")
	for g := range 12 {
		MustSendFIFO(t, s, q.ID, base, NewGroupMessage(g+1, fmt.Sprintf("old-%02d", g), base))
	}
	later := base.Add(retention + time.Hour)
	MustSendFIFO(t, s, q.ID, later, NewGroupMessage(100, "new", later), NewGroupMessage(101, "new", later))
	now := later.Add(time.Second)
	checkOrder(t, "receive of 1 behind expired groups", mustReceive(t, s, q.ID, now, now.Add(lease), 1), MessageID(100))
	now = now.Add(lease + time.Second)
	checkOrder(t, "receive of 10 behind expired groups", mustReceive(t, s, q.ID, now, now.Add(lease), 10),
		MessageID(100), MessageID(101))
}

// ---------------------------------------------------------------------------
// FIFO: how groups are ordered against each other (baton.Store's
// MessageReceive). Each case is one that SQS answered when LocalStack
// recorded its tests against AWS (tests/aws/services/sqs/test_sqs.py); the
// suite runs it on one store, and the shared suite on two handles, one
// call on each in turn, as two servers behind a load balancer would.

// fifoGroupCase is one case: it calls the handles in turn through next.
type fifoGroupCase struct {
	name string
	run  func(t *testing.T, next func() baton.Store, qid uint64)
}

var fifoGroupCases = []fifoGroupCase{
	// test_fifo_receive_message_with_zero_visibility_timeout: a group
	// received with visibility timeout 0 is visible again from that
	// receive on, so the group not yet received comes first.
	{"ZeroVisibility", func(t *testing.T, next func() baton.Store, qid uint64) {
		MustSendFIFO(t, next(), qid, base,
			NewGroupMessage(1, "g1", base), NewGroupMessage(2, "g2", base), NewGroupMessage(3, "g2", base),
			NewGroupMessage(4, "g3", base), NewGroupMessage(5, "g1", base))
		now := at(time.Second)
		checkOrder(t, "receive 3, visibility 0", mustReceive(t, next(), qid, now, now, 3), MessageID(1), MessageID(5), MessageID(2))
		checkOrder(t, "receive 10, visibility 0", mustReceive(t, next(), qid, now, now, 10),
			MessageID(4), MessageID(1), MessageID(5), MessageID(2), MessageID(3))
	}},
	// test_fifo_message_group_visibility: two messages of g1 share one
	// lease, g2's head has the next; when both lapse, g3 (waiting since
	// its send) comes first, then g1, whose lease ended first, then g2.
	{"AfterLapse", func(t *testing.T, next func() baton.Store, qid uint64) {
		MustSendFIFO(t, next(), qid, base,
			NewGroupMessage(1, "g1", base), NewGroupMessage(2, "g1", base), NewGroupMessage(3, "g1", base),
			NewGroupMessage(4, "g1", base), NewGroupMessage(5, "g2", base), NewGroupMessage(6, "g3", base))
		checkOrder(t, "receive 2", mustReceive(t, next(), qid, base, at(lease), 2), MessageID(1), MessageID(2))
		now := at(time.Second)
		checkOrder(t, "receive 1 while g1 is in flight", mustReceive(t, next(), qid, now, now.Add(lease), 1), MessageID(5))
		now = at(2 * lease)
		checkOrder(t, "receive 10 when both leases lapsed", mustReceive(t, next(), qid, now, now, 10),
			MessageID(6), MessageID(1), MessageID(2), MessageID(3), MessageID(4), MessageID(5))
	}},
	// test_fifo_message_group_visibility_after_terminate_visibility_timeout:
	// a head released by ChangeMessageVisibility waits from the release
	// on, behind a group that waited since its send; the message after it,
	// still in flight, holds the rest of its group.
	{"AfterRelease", func(t *testing.T, next func() baton.Store, qid uint64) {
		MustSendFIFO(t, next(), qid, base,
			NewGroupMessage(1, "g1", base), NewGroupMessage(2, "g1", base), NewGroupMessage(3, "g2", base))
		checkOrder(t, "receive 2", mustReceive(t, next(), qid, base, at(lease), 2), MessageID(1), MessageID(2))
		now := at(time.Second)
		checkResult(t, "release g1's head",
			MustChangeVisibility(t, next(), baton.MessageChangeVisibilityParams{QueueID: qid, MessageID: MessageID(1), Epoch: 1, Now: now, VisibleAt: now}),
			baton.LeaseCurrent)
		checkOrder(t, "receive 3 after the release", mustReceive(t, next(), qid, now, now.Add(lease), 3), MessageID(3), MessageID(1))
	}},
	// test_fifo_message_group_visibility_after_delete: once g1's received
	// messages are deleted, its next message, never received, waits from
	// its send: between g2's and g3's.
	{"AfterDelete", func(t *testing.T, next func() baton.Store, qid uint64) {
		MustSendFIFO(t, next(), qid, base,
			NewGroupMessage(1, "g1", base), NewGroupMessage(2, "g2", base), NewGroupMessage(3, "g1", base),
			NewGroupMessage(4, "g2", base), NewGroupMessage(5, "g1", base), NewGroupMessage(6, "g1", base),
			NewGroupMessage(7, "g3", base))
		checkOrder(t, "receive 2", mustReceive(t, next(), qid, base, at(lease), 2), MessageID(1), MessageID(3))
		now := at(time.Second)
		for _, n := range []int{1, 3} {
			checkResult(t, "delete "+MessageID(n),
				MustDelete(t, next(), baton.MessageDeleteParams{QueueID: qid, MessageID: MessageID(n), Epoch: 1, Now: now, RequireLive: true}),
				baton.LeaseCurrent)
		}
		checkOrder(t, "receive 10 after the deletes", mustReceive(t, next(), qid, now, now.Add(lease), 10),
			MessageID(2), MessageID(4), MessageID(5), MessageID(6), MessageID(7))
	}},
	// A group whose head fails again and again (its lease lapses each
	// time) is not offered first every time: each lapse puts it behind
	// the groups that waited longer.
	{"FailingHeadWaitsItsTurn", func(t *testing.T, next func() baton.Store, qid uint64) {
		MustSendFIFO(t, next(), qid, base,
			NewGroupMessage(1, "g1", base), NewGroupMessage(2, "g2", base), NewGroupMessage(3, "g3", base))
		want := []int{1, 2, 3, 1, 2}
		for i, n := range want {
			now := at(time.Duration(i) * lease)
			checkOrder(t, fmt.Sprintf("receive %d, each lease lapsing", i+1),
				mustReceive(t, next(), qid, now, now.Add(lease), 1), MessageID(n))
		}
	}},
}

// testFIFOGroupsWaitingLongestFirst runs fifoGroupCases on one store.
func testFIFOGroupsWaitingLongestFirst(t *testing.T, s baton.Store) {
	runFIFOGroupCases(t, s, s)
}

// runFIFOGroupCases runs every case, each on a queue of its own, calling a
// and b in turn.
func runFIFOGroupCases(t *testing.T, a, b baton.Store) {
	for i, c := range fifoGroupCases {
		t.Run(c.name, func(t *testing.T) {
			q := mustCreateFIFO(t, a, 100+i, fmt.Sprintf("groups-%d.fifo", i))
			turn := 0
			next := func() baton.Store {
				turn++
				if turn%2 == 0 {
					return b
				}
				return a
			}
			c.run(t, next, q.ID)
		})
	}
}

// testFairMixedLifecycle: on a fair queue holding messages with and without
// a group id, delayed and not, each kind is counted in each state, listed
// in flight, released and received again, moved to a queue without groups
// (which they make a fair queue), and dropped past retention.
func testFairMixedLifecycle(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "mixed")
	dlq := mustCreate(t, s, 2, "dlq")
	ud := NewMessage(3, base)
	ud.VisibleAt = at(time.Hour)
	gd := NewGroupMessage(4, "a", base)
	gd.VisibleAt = at(2 * time.Hour)
	MustSend(t, s, q.ID, NewMessage(1, base), NewGroupMessage(2, "a", base), ud, gd, NewGroupMessage(5, "b", base))

	now := at(time.Second)
	end := now.Add(lease)
	checkStats(t, "stats after the send", MustStats(t, s, q.ID, now),
		baton.MessageStats{Visible: 3, Delayed: 2, NextVisibleAt: at(time.Hour)})
	got := mustReceive(t, s, q.ID, now, end, 10)
	checkIDs(t, "receive all visible", got, MessageID(1), MessageID(2), MessageID(5))
	checkStats(t, "stats with all visible in flight", MustStats(t, s, q.ID, now),
		baton.MessageStats{InFlight: 3, Delayed: 2, NextVisibleAt: end})
	if l, ok := s.(baton.InFlightLister); ok {
		all, err := l.MessagesInFlight(t.Context(), now, 10)
		if err != nil {
			t.Fatalf("list in flight: %v", err)
		}
		checkIDs(t, "listed in flight", all[q.ID], MessageID(1), MessageID(2), MessageID(5))
	}

	// Release one of each kind: both come back, counted as visible.
	byID := map[string]*baton.Message{}
	for _, m := range got {
		byID[m.ID] = m
	}
	for _, id := range []string{MessageID(1), MessageID(2)} {
		checkResult(t, "release "+id, MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{
			QueueID: q.ID, MessageID: id, Epoch: byID[id].Epoch, Now: now, VisibleAt: now,
		}), baton.LeaseCurrent)
	}
	checkStats(t, "stats after two releases", MustStats(t, s, q.ID, now),
		baton.MessageStats{Visible: 2, InFlight: 1, Delayed: 2, NextVisibleAt: end})
	got = mustReceive(t, s, q.ID, now, end, 10)
	checkIDs(t, "receive the released", got, MessageID(1), MessageID(2))

	// Once every lease and delay is over, move one of each kind to a queue
	// without groups: the grouped one makes it a fair queue too.
	later := at(3 * time.Hour)
	for _, id := range []string{MessageID(3), MessageID(4)} {
		out, err := s.MessageMove(t.Context(), baton.MessageMoveParams{
			QueueID: q.ID, MessageID: id, ToQueueID: dlq.ID, Now: later, ReceiveCount: 1, DeadLetterSourceARN: sourceARN,
		})
		if err != nil {
			t.Fatalf("move %s: %v", id, err)
		}
		checkResult(t, "move "+id, out, baton.LeaseCurrent)
	}
	checkStats(t, "stats of the source after the moves", MustStats(t, s, q.ID, later), baton.MessageStats{Visible: 3})
	checkStats(t, "stats of the target after the moves", MustStats(t, s, dlq.ID, later), baton.MessageStats{Visible: 2})
	checkIDs(t, "receive from the target", mustReceive(t, s, dlq.ID, later, later.Add(lease), 10), MessageID(3), MessageID(4))

	// Past retention, a receive drops both kinds, visible or released.
	past := MustReceive(t, s, baton.MessageReceiveParams{
		QueueID: q.ID, Now: later, Max: 10, VisibleAt: later.Add(lease), RetentionCutoff: at(time.Second),
	})
	checkIDs(t, "receive past retention", past)
	checkStats(t, "stats of the source past retention", MustStats(t, s, q.ID, later), baton.MessageStats{})
}

// testFIFOMoveThereAndBack: a FIFO message moved to another FIFO queue is
// received there, and moved back, from its lease, it joins the end of its
// group, counted where it is each time.
func testFIFOMoveThereAndBack(t *testing.T, s baton.Store) {
	src := mustCreateFIFO(t, s, 1, "orders.fifo")
	dlq := mustCreateFIFO(t, s, 2, "dlq.fifo")
	MustSendFIFO(t, s, src.ID, base, NewGroupMessage(1, "a", base), NewGroupMessage(2, "a", base), NewGroupMessage(3, "b", base))

	now := at(time.Second)
	move := func(what string, p baton.MessageMoveParams) {
		t.Helper()
		out, err := s.MessageMove(t.Context(), p)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		checkResult(t, what, out, baton.LeaseCurrent)
	}
	move("move the head of a away", baton.MessageMoveParams{
		QueueID: src.ID, MessageID: MessageID(1), ToQueueID: dlq.ID, Now: now, ReceiveCount: 1,
		DeadLetterSourceARN: sourceARN, ReplaceDedupID: true,
	})
	checkStats(t, "stats of the source", MustStats(t, s, src.ID, now), baton.MessageStats{Visible: 2})
	checkStats(t, "stats of the target", MustStats(t, s, dlq.ID, now), baton.MessageStats{Visible: 1})
	got := mustReceiveOne(t, s, dlq.ID, now, now.Add(lease), MessageID(1))
	checkStats(t, "stats of the target after its receive", MustStats(t, s, dlq.ID, now),
		baton.MessageStats{InFlight: 1, NextVisibleAt: now.Add(lease)})

	move("move it back", baton.MessageMoveParams{
		QueueID: dlq.ID, MessageID: got.ID, Epoch: got.Epoch, ToQueueID: src.ID, Now: now,
		ReceiveCount: got.ReceiveCount, ResetSentAt: true, ReplaceDedupID: true,
	})
	checkStats(t, "stats of the target after the move back", MustStats(t, s, dlq.ID, now), baton.MessageStats{})
	checkStats(t, "stats of the source after the move back", MustStats(t, s, src.ID, now), baton.MessageStats{Visible: 3})
	groups := byGroup(mustReceive(t, s, src.ID, now, now.Add(lease), 10))
	if !slices.Equal(groups["a"], []string{MessageID(2), MessageID(1)}) || !slices.Equal(groups["b"], []string{MessageID(3)}) {
		t.Errorf("receive from the source: got %v, want a: 2 then 1 (moved back last), b: 3", groups)
	}
}
