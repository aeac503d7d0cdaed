package pebblestore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil/poll"
	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/baton-sqs/baton/store/storetest"
)

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) baton.Store { return MustOpen(t, t.TempDir()) })
}

func TestStoreRelaxed(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) baton.Store {
		s, err := pebblestore.Open(t.Context(), t.TempDir(), pebblestore.Options{Durability: pebblestore.DurabilityRelaxed})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// MustOpen opens a store in dir with full durability; the test closes it.
func MustOpen(tb testing.TB, dir string) *pebblestore.Store {
	tb.Helper()
	s, err := pebblestore.Open(tb.Context(), dir, pebblestore.Options{})
	if err != nil {
		tb.Fatalf("open %s: %v", dir, err)
	}
	return s
}

// mustClose closes s and fails the test on error.
func mustClose(tb testing.TB, s *pebblestore.Store) {
	tb.Helper()
	if err := s.Close(); err != nil {
		tb.Fatalf("close: %v", err)
	}
}

// reopen closes s and opens its directory again, closing the new store when
// the test ends.
func reopen(tb testing.TB, s *pebblestore.Store, dir string) *pebblestore.Store {
	tb.Helper()
	mustClose(tb, s)
	s = MustOpen(tb, dir)
	tb.Cleanup(func() { s.Close() })
	return s
}

var base = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) time.Time { return base.Add(d) }

const lease = 30 * time.Second

func receive(tb testing.TB, s baton.Store, queueID uint64, now, visibleAt time.Time, max int) []*baton.Message {
	tb.Helper()
	return storetest.MustReceive(tb, s, baton.MessageReceiveParams{
		QueueID: queueID, Now: now, Max: max, VisibleAt: visibleAt, RetentionCutoff: now.Add(-96 * time.Hour),
	})
}

func idsOf(msgs []*baton.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

func TestReopenKeepsQueues(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := MustOpen(t, dir)

	orders := storetest.NewQueue(storetest.QueueID(1), "orders")
	orders.Tags = map[string]string{"team": "billing", "env": "test ✓"}
	orders.Attributes.VisibilityTimeout = 45
	orders.Attributes.RedrivePolicy = `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":3}`
	fifo := storetest.NewFIFOQueue(^uint64(0), "jobs.fifo")
	fifo.DedupScope = "messageGroup"
	fifo.Attributes.ContentBasedDeduplication = true
	gone := storetest.NewQueue(storetest.QueueID(3), "gone")
	for _, q := range []*baton.Queue{orders, fifo, gone} {
		storetest.MustCreateQueue(t, s, q)
	}
	attrs := orders.Attributes
	attrs.DelaySeconds = 7
	updated, err := s.QueueUpdate(t.Context(), baton.QueueUpdateParams{
		Region: storetest.Region, Account: storetest.Account, Name: "orders", Attributes: &attrs,
		TagsSet: map[string]string{"added": "yes"}, TagsDelete: []string{"env"}, ModifiedAt: at(time.Second),
	})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if err := s.QueuePurge(t.Context(), baton.QueuePurgeParams{Region: storetest.Region, Account: storetest.Account, Name: "jobs.fifo", Now: at(2 * time.Second), PurgedCutoff: at(-time.Minute)}); err != nil {
		t.Fatalf("purge: %v", err)
	}
	if err := s.QueueDelete(t.Context(), storetest.Region, storetest.Account, "gone", at(3*time.Second)); err != nil {
		t.Fatalf("delete: %v", err)
	}
	wantFIFO := *fifo
	wantFIFO.PurgedAt = at(2 * time.Second)

	s = reopen(t, s, dir)
	for _, want := range []*baton.Queue{updated, &wantFIFO} {
		got := storetest.MustGetQueue(t, s, want.Account, want.Name)
		if got.ID != want.ID || got.Attributes != want.Attributes || !maps.Equal(got.Tags, want.Tags) ||
			!got.CreatedAt.Equal(want.CreatedAt) || !got.ModifiedAt.Equal(want.ModifiedAt) ||
			!got.PurgedAt.Equal(want.PurgedAt) || got.DedupScope != want.DedupScope {
			t.Errorf("queue %s after reopen:\n got %+v\nwant %+v", want.Name, got, want)
		}
	}
	if _, err := s.QueueGet(t.Context(), storetest.Region, storetest.Account, "gone"); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("get the deleted queue after reopen: got %v, want ErrNotFound", err)
	}
	// The deletion is remembered for the 60-second rule.
	err = s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: storetest.NewQueue(storetest.QueueID(4), "gone"), DeletedCutoff: at(2 * time.Second)})
	if !errors.Is(err, baton.ErrDeletedRecently) {
		t.Errorf("re-create the deleted queue within the minute after reopen: got %v, want ErrDeletedRecently", err)
	}
}

func TestReopenKeepsMessagesAndLeases(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := MustOpen(t, dir)
	q := storetest.NewQueue(storetest.QueueID(1), "orders")
	storetest.MustCreateQueue(t, s, q)

	full := storetest.NewMessage(1, base)
	full.Attributes = map[string]baton.MessageAttribute{
		"Str": {DataType: "String", StringValue: "v ✓"},
		"Bin": {DataType: "Binary.png", BinaryValue: []byte{0, 1, 0xff}},
	}
	full.TraceHeader = "Root=1-5759e988-bd862e3fe1be46a994272793"
	delayed := storetest.NewMessage(4, base)
	delayed.VisibleAt = at(time.Hour)
	storetest.MustSend(t, s, q.ID, full, storetest.NewMessage(2, base), storetest.NewMessage(3, base), delayed, storetest.NewMessage(5, base))

	// 1 is leased twice (the second lease extended), 2 received and
	// released, 3 deleted, 4 delayed, 5 untouched.
	now := at(time.Second)
	got := receive(t, s, q.ID, now, now.Add(lease), 10)
	if len(got) != 4 {
		t.Fatalf("first receive: got %v, want 4 messages", idsOf(got))
	}
	for _, p := range []baton.MessageChangeVisibilityParams{
		{QueueID: q.ID, MessageID: storetest.MessageID(1), Epoch: 1, Now: now, VisibleAt: now},
		{QueueID: q.ID, MessageID: storetest.MessageID(2), Epoch: 1, Now: now, VisibleAt: now},
		{QueueID: q.ID, MessageID: storetest.MessageID(5), Epoch: 1, Now: now, VisibleAt: now},
	} {
		storetest.MustChangeVisibility(t, s, p)
	}
	storetest.MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: storetest.MessageID(3), Epoch: 1, Now: now})
	later := at(2 * time.Second)
	leased := receive(t, s, q.ID, later, later.Add(lease), 1)
	if len(leased) != 1 {
		t.Fatalf("second receive: got %v, want one message", idsOf(leased))
	}
	first := leased[0]
	storetest.MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{
		QueueID: q.ID, MessageID: first.ID, Epoch: first.Epoch, Now: later, VisibleAt: later.Add(time.Hour),
	})
	statsBefore := storetest.MustStats(t, s, q.ID, later)

	s = reopen(t, s, dir)
	if got := storetest.MustStats(t, s, q.ID, later); got != statsBefore {
		t.Errorf("stats after reopen: got %+v, want %+v", got, statsBefore)
	}
	// The lease taken before the restart holds: its receipt deletes.
	out := storetest.MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: first.ID, Epoch: first.Epoch, Now: at(time.Minute), RequireLive: true})
	if out.Result != baton.LeaseCurrent {
		t.Errorf("delete by the lease taken before the restart: got result %d, want LeaseCurrent", out.Result)
	}
	if out.Message == nil || out.Message.Body != first.Body || !out.Message.VisibleAt.Equal(later.Add(time.Hour)) {
		t.Errorf("delete by the lease taken before the restart: got message %+v", out.Message)
	}
	// The others come back with their receive counts and epochs.
	rest := receive(t, s, q.ID, at(2*time.Hour), at(2*time.Hour+lease), 10)
	wantCount := map[string]int{storetest.MessageID(1): 2, storetest.MessageID(2): 2, storetest.MessageID(4): 1, storetest.MessageID(5): 2}
	delete(wantCount, first.ID)
	if len(rest) != len(wantCount) {
		t.Errorf("receive after reopen: got %v, want %d messages", idsOf(rest), len(wantCount))
	}
	for _, m := range rest {
		if m.ReceiveCount != wantCount[m.ID] || m.Epoch != uint32(wantCount[m.ID]) {
			t.Errorf("message %s after reopen: ReceiveCount %d, Epoch %d, want %d", m.ID, m.ReceiveCount, m.Epoch, wantCount[m.ID])
		}
		if m.ID == full.ID {
			if m.Body != full.Body || m.TraceHeader != full.TraceHeader || len(m.Attributes) != 2 ||
				m.Attributes["Str"].StringValue != full.Attributes["Str"].StringValue || string(m.Attributes["Bin"].BinaryValue) != string(full.Attributes["Bin"].BinaryValue) ||
				!m.FirstReceivedAt.Equal(now) || !m.SentAt.Equal(base) {
				t.Errorf("message 1 after reopen: got %+v, want the payload and times it was sent with", m)
			}
		}
	}
}

func TestReopenKeepsFIFOState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := MustOpen(t, dir)
	q := storetest.NewFIFOQueue(storetest.QueueID(1), "orders.fifo")
	storetest.MustCreateQueue(t, s, q)
	a := storetest.NewGroupMessage(1, "g", base)
	b := storetest.NewGroupMessage(2, "g", base)
	sent := storetest.MustSendFIFO(t, s, q.ID, base, a, b)
	// Hold the group's head.
	if got := receive(t, s, q.ID, base, at(lease), 1); len(got) != 1 || got[0].ID != a.ID {
		t.Fatalf("receive the head: got %v, want [%s]", idsOf(got), a.ID)
	}

	s = reopen(t, s, dir)
	now := at(time.Second)
	// The deduplication key still answers with the original.
	dup := storetest.NewGroupMessage(3, "g", now)
	dup.DedupID = a.DedupID
	if got := storetest.MustSendFIFO(t, s, q.ID, now, dup)[0]; !got.Duplicate || got.MessageID != a.ID || got.SequenceNumber != sent[0].SequenceNumber {
		t.Errorf("send a's key after reopen: got %+v, want a duplicate of %+v", got, sent[0])
	}
	// Numbering goes on upwards.
	c := storetest.NewGroupMessage(4, "h", now)
	next := storetest.MustSendFIFO(t, s, q.ID, now, c)[0]
	if len(next.SequenceNumber) != len(sent[1].SequenceNumber) || next.SequenceNumber <= sent[1].SequenceNumber {
		t.Errorf("sequence number after reopen: got %s, want more than %s", next.SequenceNumber, sent[1].SequenceNumber)
	}
	// The group is still blocked by its head's lease, until it ends.
	if got := receive(t, s, q.ID, at(lease-time.Millisecond), at(2*lease), 10); !slices.Equal(idsOf(got), []string{c.ID}) {
		t.Errorf("receive during the head's lease after reopen: got %v, want [%s]", idsOf(got), c.ID)
	}
	if got := receive(t, s, q.ID, at(lease), at(2*lease), 10); !slices.Equal(idsOf(got), []string{a.ID, b.ID}) {
		t.Errorf("receive after the head's lease after reopen: got %v, want [%s %s]", idsOf(got), a.ID, b.ID)
	}
}

func TestReopenKeepsMoves(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := MustOpen(t, dir)
	src := storetest.NewQueue(storetest.QueueID(1), "orders")
	dlq := storetest.NewQueue(storetest.QueueID(2), "dlq")
	storetest.MustCreateQueue(t, s, src)
	storetest.MustCreateQueue(t, s, dlq)
	storetest.MustSend(t, s, dlq.ID, storetest.NewMessage(1, base))
	storetest.MustSend(t, s, src.ID, storetest.NewMessage(2, base), storetest.NewMessage(3, base))
	got := receive(t, s, src.ID, base, at(lease), 10)
	if len(got) != 2 {
		t.Fatalf("receive: got %v, want 2 messages", idsOf(got))
	}
	now := at(time.Second)
	const arn = "arn:aws:sqs:us-east-1:000000000000:orders"
	out, err := s.MessageMove(t.Context(), baton.MessageMoveParams{
		QueueID: src.ID, MessageID: storetest.MessageID(2), Epoch: 1, ToQueueID: dlq.ID, Now: now,
		ReceiveCount: 1, DeadLetterSourceARN: arn, ResetSentAt: true,
	})
	if err != nil || out.Result != baton.LeaseCurrent {
		t.Fatalf("move: got %+v, %v; want LeaseCurrent", out, err)
	}

	s = reopen(t, s, dir)
	if st := storetest.MustStats(t, s, src.ID, now); st.InFlight != 1 || st.Visible != 0 {
		t.Errorf("source after reopen: got %+v, want 1 in flight", st)
	}
	moved := receive(t, s, dlq.ID, now, now.Add(lease), 10)
	if !slices.Equal(idsOf(moved), []string{storetest.MessageID(1), storetest.MessageID(2)}) {
		t.Fatalf("dead-letter queue after reopen: got %v, want [1 2] in that order", idsOf(moved))
	}
	m := moved[1]
	if m.Body != "message 2" || m.DeadLetterSourceARN != arn || m.ReceiveCount != 2 || !m.SentAt.Equal(now) {
		t.Errorf("moved message after reopen: got %+v", m)
	}
}

func TestReopenKeepsExpiry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := MustOpen(t, dir)
	q := storetest.NewQueue(storetest.QueueID(1), "orders")
	storetest.MustCreateQueue(t, s, q)
	storetest.MustSend(t, s, q.ID, storetest.NewMessage(1, base), storetest.NewMessage(2, at(time.Minute)),
		storetest.NewMessage(3, at(2*time.Minute)))
	// A receive drops 1, a sweep drops 2; a later receive would keep both.
	now := at(10 * time.Minute)
	got := storetest.MustReceive(t, s, baton.MessageReceiveParams{QueueID: q.ID, Now: now, Max: 1, VisibleAt: now, RetentionCutoff: at(time.Second)})
	if len(got) != 1 || got[0].ID == storetest.MessageID(1) {
		t.Fatalf("receive past retention: got %v, want one message, not 1", idsOf(got))
	}
	if n, err := s.MessageExpire(t.Context(), q.ID, at(90*time.Second)); err != nil {
		t.Fatalf("expire: %v", err)
	} else if n != 1 && got[0].ID != storetest.MessageID(2) {
		t.Errorf("expire: got %d, want 1", n)
	}

	s = reopen(t, s, dir)
	got = receive(t, s, q.ID, now, now.Add(lease), 10)
	if !slices.Equal(idsOf(got), []string{storetest.MessageID(3)}) {
		t.Errorf("receive after reopen with no retention cutoff: got %v, want [3]", idsOf(got))
	}
}

func TestBodiesNotKeptAfterCommit(t *testing.T) {
	t.Parallel()
	s := MustOpen(t, t.TempDir())
	t.Cleanup(func() { s.Close() })
	q := storetest.NewQueue(storetest.QueueID(1), "orders")
	storetest.MustCreateQueue(t, s, q)
	big := strings.Repeat("x", 256<<10)
	for i := range 8 {
		m := storetest.NewMessage(i+1, base)
		m.Body = big
		m.Attributes = map[string]baton.MessageAttribute{"A": {DataType: "String", StringValue: big}}
		storetest.MustSend(t, s, q.ID, m)
	}
	if n := pebblestore.PendingPayloads(s); n != 0 {
		t.Errorf("payloads held after the sends returned: %d, want 0", n)
	}
	for i := range 8 {
		m := pebblestore.IndexMessage(t, s, q.ID, storetest.MessageID(i+1))
		if m.Body != "" || m.Attributes != nil || m.TraceHeader != "" {
			t.Errorf("index holds message %s with a %d-byte body and %d attributes, want neither", m.ID, len(m.Body), len(m.Attributes))
		}
	}
	got := receive(t, s, q.ID, base, at(lease), 10)
	if len(got) != 8 {
		t.Fatalf("receive: got %d messages, want 8", len(got))
	}
	for _, m := range got {
		if m.Body != big || m.Attributes["A"].StringValue != big {
			t.Errorf("received %s without its body or attributes", m.ID)
		}
	}
}

func TestGroupCommit(t *testing.T) {
	t.Parallel()
	s := MustOpen(t, t.TempDir())
	t.Cleanup(func() { s.Close() })
	q := storetest.NewQueue(storetest.QueueID(1), "orders")
	storetest.MustCreateQueue(t, s, q)

	// One send's round is held while 32 more arrive: all 32 must then go
	// to disk in one batch, not one each. Holding the
	// first commit makes this independent of how fast the disk syncs.
	release := make(chan struct{})
	held, queued := pebblestore.HoldCommits(s, release)
	const senders = 32
	before := s.Stats()
	var wg sync.WaitGroup
	wg.Go(func() { storetest.MustSend(t, s, q.ID, storetest.NewMessage(1, base)) })
	<-held
	for w := range senders {
		wg.Go(func() { storetest.MustSend(t, s, q.ID, storetest.NewMessage(w+2, base)) })
	}
	poll.For(t, 10*time.Second, func() error {
		if n := queued(); n < senders {
			return fmt.Errorf("%d sends queued behind the held round, want %d", n, senders)
		}
		return nil
	})
	close(release)
	wg.Wait()
	after := s.Stats()
	changes, commits := after.Changes-before.Changes, after.Commits-before.Commits
	if changes != senders+1 || commits != 2 {
		t.Errorf("%d changes took %d commits, want %d in 2", changes, commits, senders+1)
	}
	if st := storetest.MustStats(t, s, q.ID, base); st.Visible != senders+1 {
		t.Errorf("visible after the sends: got %d, want %d", st.Visible, senders+1)
	}
}

func TestSecondOpenRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := MustOpen(t, dir)
	t.Cleanup(func() { s.Close() })
	_, err := pebblestore.Open(t.Context(), dir, pebblestore.Options{})
	if !errors.Is(err, pebblestore.ErrLocked) {
		t.Fatalf("open a directory already open: got %v, want ErrLocked", err)
	}
	mustClose(t, s)
	again := MustOpen(t, dir)
	mustClose(t, again)
}

func TestClosedStoreRefuses(t *testing.T) {
	t.Parallel()
	s := MustOpen(t, t.TempDir())
	q := storetest.NewQueue(storetest.QueueID(1), "orders")
	storetest.MustCreateQueue(t, s, q)
	mustClose(t, s)
	_, err := s.MessageSend(t.Context(), baton.MessageSendParams{QueueID: q.ID, Messages: []*baton.Message{storetest.NewMessage(1, base)}})
	if !errors.Is(err, pebblestore.ErrClosed) {
		t.Errorf("send after close: got %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("close twice: %v", err)
	}
}

func TestNewerFormatRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustClose(t, MustOpen(t, dir))
	if err := pebblestore.SetFormat(filepath.Join(dir, pebblestore.LogDir), 99); err != nil {
		t.Fatal(err)
	}
	_, err := pebblestore.Open(t.Context(), dir, pebblestore.Options{})
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("open a log of a newer format: got %v, want an error saying it is newer", err)
	}
}

func TestParseDurability(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want pebblestore.Durability
		ok   bool
	}{
		{"full", pebblestore.DurabilityFull, true},
		{"", pebblestore.DurabilityFull, true},
		{"relaxed", pebblestore.DurabilityRelaxed, true},
		{"none", 0, false},
	} {
		got, err := pebblestore.ParseDurability(c.in)
		if (err == nil) != c.ok || c.ok && got != c.want {
			t.Errorf("ParseDurability(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
		if c.ok && c.in != "" && got.String() != c.in {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), c.in)
		}
	}
}

// A receive that leases messages and then fails to read their bodies (its
// caller gone, an I/O error) gives the leases back: nobody holds the
// messages, and they must not stay hidden for the whole lease.
func TestReceiveFailingAfterLeaseReleases(t *testing.T) {
	t.Parallel()
	s := MustOpen(t, t.TempDir())
	t.Cleanup(func() { s.Close() })
	q := storetest.NewQueue(storetest.QueueID(1), "orders")
	storetest.MustCreateQueue(t, s, q)
	storetest.MustSend(t, s, q.ID, storetest.NewMessage(1, base), storetest.NewMessage(2, base))

	now := at(time.Second)
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	if got, err := s.MessageReceive(gone, baton.MessageReceiveParams{
		QueueID: q.ID, Now: now, Max: 10, VisibleAt: now.Add(lease),
	}); err == nil {
		t.Fatalf("receive for a caller gone: got %v, want its context's error", idsOf(got))
	}
	again := receive(t, s, q.ID, now, now.Add(lease), 10)
	if len(again) != 2 {
		t.Fatalf("after a failed receive: got %v, want both messages visible again", idsOf(again))
	}
}
