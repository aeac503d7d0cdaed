package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// browseTests pin Store.MessageBrowse: a listing in send order that
// touches nothing, pages that neither repeat nor skip a message, and its
// filters.
var browseTests = []test{
	{"TouchesNothing", testBrowseTouchesNothing},
	{"RoundTrip", testBrowseRoundTrip},
	{"Order", testBrowseOrder},
	{"Paging10000", testBrowsePaging10000},
	{"ArrivalOutOfOrder", testBrowseArrivalOutOfOrder},
	{"States", testBrowseStates},
	{"BodyContains", testBrowseBodyContains},
	{"BinaryBody", testBrowseBinaryBody},
	{"CursorStableUnderDeletes", testBrowseCursorStableUnderDeletes},
	{"InvalidCursor", testBrowseInvalidCursor},
	{"UnknownQueue", testBrowseUnknownQueue},
}

// MustBrowse lists one page and fails the test on error or on a page
// longer than p.Limit.
func MustBrowse(tb testing.TB, s baton.Store, p baton.MessageBrowseParams) baton.MessageBrowsePage {
	tb.Helper()
	page, err := s.MessageBrowse(tb.Context(), p)
	if err != nil {
		tb.Fatalf("browse %+v: %v", p, err)
	}
	if len(page.Messages) > p.Limit {
		tb.Fatalf("browse returned %d messages, want at most Limit = %d", len(page.Messages), p.Limit)
	}
	return page
}

// browseAll pages through the queue, limit messages a page, and returns
// every message listed, failing on a page that neither lists a message nor
// ends the listing.
func browseAll(tb testing.TB, s baton.Store, p baton.MessageBrowseParams) []*baton.Message {
	tb.Helper()
	var all []*baton.Message
	for pages := 0; ; pages++ {
		if pages > 100000 {
			tb.Fatal("browse does not end")
		}
		page := MustBrowse(tb, s, p)
		all = append(all, page.Messages...)
		if page.Next == "" {
			return all
		}
		if len(page.Messages) == 0 {
			tb.Fatalf("browse: an empty page with a cursor (after %d messages)", len(all))
		}
		p.Cursor = page.Next
	}
}

func testBrowseTouchesNothing(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	MustSend(t, s, q.ID, NewMessage(1, base))
	held := mustReceiveOne(t, s, q.ID, at(time.Second), at(time.Second+lease), MessageID(1))
	MustSend(t, s, q.ID, NewMessage(2, at(time.Millisecond)), NewMessage(3, at(2*time.Millisecond)))

	for i := range 3 {
		page := MustBrowse(t, s, baton.MessageBrowseParams{QueueID: q.ID, Now: at(2 * time.Second), Limit: 10})
		checkIDs(t, fmt.Sprintf("browse %d", i), page.Messages, MessageID(1), MessageID(2), MessageID(3))
	}
	// The two never received come as a first receive would have them; the
	// held one keeps its lease.
	now := at(3 * time.Second)
	got := mustReceive(t, s, q.ID, now, now.Add(lease), 10)
	checkIDs(t, "receive after browsing", got, MessageID(2), MessageID(3))
	for _, m := range got {
		if m.ReceiveCount != 1 || m.Epoch != 1 {
			t.Errorf("message %s after browsing: receive count %d, lease %d; want 1 and 1", m.ID, m.ReceiveCount, m.Epoch)
		}
	}
	out := MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: held.ID, Epoch: held.Epoch, Now: now, RequireLive: true})
	checkResult(t, "delete the lease held while browsing", out, baton.LeaseCurrent)
	checkStats(t, "stats after browsing", MustStats(t, s, q.ID, now), baton.MessageStats{InFlight: 2, NextVisibleAt: now.Add(lease)})
}

func testBrowseRoundTrip(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	m := fullMessage(1, base)
	MustSend(t, s, q.ID, m)
	want := cloneMessage(m)
	page := MustBrowse(t, s, baton.MessageBrowseParams{QueueID: q.ID, Now: base, Limit: 1})
	if len(page.Messages) != 1 {
		t.Fatalf("browse: got %v, want [%s]", ids(page.Messages), m.ID)
	}
	checkMessage(t, "browsed message", page.Messages[0], want)
	if page.Next != "" {
		t.Errorf("browse of the only message: Next = %q, want none", page.Next)
	}
	// A listed message is a copy.
	page.Messages[0].Attributes["Bin"].BinaryValue[0] = 'X'
	again := MustBrowse(t, s, baton.MessageBrowseParams{QueueID: q.ID, Now: base, Limit: 1})
	checkMessage(t, "browsed again after changing the first copy", again.Messages[0], want)
}

// sendNumbered sends messages 1..n, three per millisecond, so that some
// share a send time and their order rests on their ids, in batches.
func sendNumbered(tb testing.TB, s baton.Store, queueID uint64, n int) {
	tb.Helper()
	var batch []*baton.Message
	for i := 1; i <= n; i++ {
		m := NewMessage(i, at(time.Duration(i/3)*time.Millisecond))
		batch = append(batch, m)
		if len(batch) == 500 || i == n {
			MustSend(tb, s, queueID, batch...)
			batch = nil
		}
	}
}

// numberedOrder is the ids of messages 1..n in browse order, oldest first.
func numberedOrder(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = MessageID(i + 1)
	}
	// MessageID is zero-padded: its text order is numeric order, which
	// within one millisecond is id order, as it should be.
	return out
}

func testBrowseOrder(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	// Sent out of order: the listing follows send times, not arrival.
	MustSend(t, s, q.ID, NewMessage(3, at(3*time.Millisecond)), NewMessage(1, base), NewMessage(2, at(time.Millisecond)))
	now := at(time.Second)
	oldest := MustBrowse(t, s, baton.MessageBrowseParams{QueueID: q.ID, Now: now, Limit: 10})
	if got, want := ids(oldest.Messages), []string{MessageID(1), MessageID(2), MessageID(3)}; !slices.Equal(got, want) {
		t.Errorf("oldest first: got %v, want %v", got, want)
	}
	newest := MustBrowse(t, s, baton.MessageBrowseParams{QueueID: q.ID, Now: now, Newest: true, Limit: 10})
	if got, want := ids(newest.Messages), []string{MessageID(3), MessageID(2), MessageID(1)}; !slices.Equal(got, want) {
		t.Errorf("newest first: got %v, want %v", got, want)
	}
}

func testBrowsePaging10000(t *testing.T, s baton.Store) {
	const n = 10000
	q := mustCreate(t, s, 1, "orders")
	sendNumbered(t, s, q.ID, n)
	now := at(time.Hour)
	want := numberedOrder(n)
	for _, tc := range []struct {
		newest bool
		limit  int
	}{{false, 1000}, {true, 777}} {
		all := browseAll(t, s, baton.MessageBrowseParams{QueueID: q.ID, Now: now, Newest: tc.newest, Limit: tc.limit})
		w := want
		if tc.newest {
			w = slices.Clone(want)
			slices.Reverse(w)
		}
		got := ids(all)
		if !slices.Equal(got, w) {
			seen := make(map[string]bool)
			for _, id := range got {
				if seen[id] {
					t.Errorf("newest=%v, %d a page: message %s listed twice", tc.newest, tc.limit, id)
					break
				}
				seen[id] = true
			}
			t.Fatalf("newest=%v, %d a page: got %d messages, want all %d in order", tc.newest, tc.limit, len(got), n)
		}
	}
}

// statesFixture leaves, at statesNow, messages 1 and 4 visible again
// after their leases were released, 2 in flight (received twice, until
// 1m) and 3 delayed (never received, until 1h).
func statesFixture(t *testing.T, s baton.Store) *baton.Queue {
	t.Helper()
	q := mustCreate(t, s, 1, "orders")
	delayed := NewMessage(3, at(2*time.Millisecond))
	delayed.VisibleAt = at(time.Hour)
	MustSend(t, s, q.ID, NewMessage(1, base), NewMessage(2, at(time.Millisecond)), delayed, NewMessage(4, at(3*time.Millisecond)))
	mustReceive(t, s, q.ID, at(time.Second), at(2*time.Second), 10) // 1, 2, 4 until 2s
	// All three again, then 1 and 4 released: only 2's second lease is
	// live at statesNow.
	rs := mustReceive(t, s, q.ID, at(3*time.Second), at(time.Minute), 10)
	checkIDs(t, "second receive", rs, MessageID(1), MessageID(2), MessageID(4))
	for _, m := range rs {
		if m.ID != MessageID(2) {
			MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: m.ID, Epoch: m.Epoch,
				Now: at(3 * time.Second), VisibleAt: at(3 * time.Second)})
		}
	}
	return q
}

var statesNow = at(10 * time.Second)

// testBrowseArrivalOutOfOrder sends messages in an order far from their
// send times (as concurrent senders and moves of old messages do), some
// sharing a send time, and pages through them every way.
func testBrowseArrivalOutOfOrder(t *testing.T, s baton.Store) {
	const n = 600
	q := mustCreate(t, s, 1, "orders")
	rng := rand.New(rand.NewPCG(22, 1))
	order := rng.Perm(n)
	sentAt := func(i int) time.Time { return at(time.Duration(i/2) * time.Millisecond) }
	for len(order) > 0 {
		k := min(len(order), 1+rng.IntN(40))
		var batch []*baton.Message
		for _, i := range order[:k] {
			batch = append(batch, NewMessage(i+1, sentAt(i)))
		}
		MustSend(t, s, q.ID, batch...)
		order = order[k:]
	}
	// A few straggle in long after, sent long before.
	MustSend(t, s, q.ID, NewMessage(n+1, at(-time.Hour)), NewMessage(n+2, at(time.Hour)))
	want := append([]string{MessageID(n + 1)}, numberedOrder(n)...)
	want = append(want, MessageID(n+2))
	now := at(2 * time.Hour)
	for _, limit := range []int{1, 7, 50, 1000} {
		for _, newest := range []bool{false, true} {
			all := browseAll(t, s, baton.MessageBrowseParams{QueueID: q.ID, Now: now, Newest: newest, Limit: limit})
			w := want
			if newest {
				w = slices.Clone(want)
				slices.Reverse(w)
			}
			if got := ids(all); !slices.Equal(got, w) {
				t.Errorf("newest=%v, %d a page: got %d messages %v…, want %d %v…", newest, limit, len(got), got[:min(5, len(got))], len(w), w[:5])
			}
		}
	}
}

func testBrowseStates(t *testing.T, s baton.Store) {
	q := statesFixture(t, s)
	for _, tc := range []struct {
		states baton.MessageState
		want   []string
	}{
		{0, []string{MessageID(1), MessageID(2), MessageID(3), MessageID(4)}},
		{baton.AllStates, []string{MessageID(1), MessageID(2), MessageID(3), MessageID(4)}},
		{baton.StateVisible, []string{MessageID(1), MessageID(4)}},
		{baton.StateInFlight, []string{MessageID(2)}},
		{baton.StateDelayed, []string{MessageID(3)}},
		{baton.StateInFlight | baton.StateDelayed, []string{MessageID(2), MessageID(3)}},
	} {
		all := browseAll(t, s, baton.MessageBrowseParams{QueueID: q.ID, Now: statesNow, States: tc.states, Limit: 1})
		if got := ids(all); !slices.Equal(got, tc.want) {
			t.Errorf("states %03b: got %v, want %v", tc.states, got, tc.want)
		}
		for _, m := range all {
			if st := m.StateAt(statesNow); tc.states != 0 && st&tc.states == 0 {
				t.Errorf("states %03b: message %s is %v", tc.states, m.ID, st)
			}
		}
	}
	// What the listing says of each message's lease.
	all := browseAll(t, s, baton.MessageBrowseParams{QueueID: q.ID, Now: statesNow, Limit: 10})
	byID := make(map[string]*baton.Message)
	for _, m := range all {
		byID[m.ID] = m
	}
	if m := byID[MessageID(2)]; m == nil || !m.Leased || !m.VisibleAt.Equal(at(time.Minute)) || m.ReceiveCount != 2 {
		t.Errorf("in-flight message: got %+v, want leased until 1m, received twice", m)
	}
	if m := byID[MessageID(3)]; m == nil || m.Leased || m.ReceiveCount != 0 || !m.VisibleAt.Equal(at(time.Hour)) {
		t.Errorf("delayed message: got %+v, want never received, visible at 1h", m)
	}
	// The listing changed nothing the counts see.
	checkStats(t, "stats after browsing", MustStats(t, s, q.ID, statesNow),
		baton.MessageStats{Visible: 2, InFlight: 1, Delayed: 1, NextVisibleAt: at(time.Minute)})
}

func testBrowseBodyContains(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	bodies := []string{"apple pie", "banana", "Apple crumble", "pineapple ✓", "cherry"}
	var msgs []*baton.Message
	for i, b := range bodies {
		m := NewMessage(i+1, at(time.Duration(i)*time.Millisecond))
		m.Body = b
		msgs = append(msgs, m)
	}
	msgs[3].VisibleAt = at(time.Hour) // delayed
	MustSend(t, s, q.ID, msgs...)
	now := at(time.Second)
	for _, tc := range []struct {
		sub    string
		states baton.MessageState
		want   []string
	}{
		{"apple", 0, []string{MessageID(1), MessageID(4)}},
		{"apple", baton.StateVisible, []string{MessageID(1)}},
		{"Apple", 0, []string{MessageID(3)}},
		{"✓", 0, []string{MessageID(4)}},
		{"e ", 0, []string{MessageID(1), MessageID(3), MessageID(4)}},
		{"durian", 0, nil},
	} {
		for _, limit := range []int{1, 10} {
			all := browseAll(t, s, baton.MessageBrowseParams{QueueID: q.ID, Now: now, States: tc.states, BodyContains: tc.sub, Limit: limit})
			if got := ids(all); !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
				t.Errorf("body holding %q, states %03b, %d a page: got %v, want %v", tc.sub, tc.states, limit, got, tc.want)
			}
		}
	}
	// The newest first, with a filter, across pages.
	all := browseAll(t, s, baton.MessageBrowseParams{QueueID: q.ID, Now: now, Newest: true, BodyContains: "a", Limit: 2})
	if got, want := ids(all), []string{MessageID(4), MessageID(2), MessageID(1)}; !slices.Equal(got, want) {
		t.Errorf("newest first holding %q: got %v, want %v", "a", got, want)
	}
}

// testBrowseBinaryBody lists a body that is not UTF-8 as sent, byte for
// byte. The engine only stores UTF-8 bodies; a store that cannot keep
// other bytes (PostgreSQL's text) may refuse the send, but then must hold
// nothing of it.
func testBrowseBinaryBody(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	m := fullMessage(1, base)
	m.Body = "\xff\xfe\x00binary\x80 body \xc3"
	want := cloneMessage(m)
	_, err := s.MessageSend(t.Context(), baton.MessageSendParams{QueueID: q.ID, Messages: []*baton.Message{m}})
	if err != nil {
		page := MustBrowse(t, s, baton.MessageBrowseParams{QueueID: q.ID, Now: base, Limit: 10})
		if len(page.Messages) != 0 {
			t.Fatalf("send of a binary body failed (%v), yet browse lists %v", err, ids(page.Messages))
		}
		t.Skipf("the store refuses bodies that are not UTF-8: %v", err)
	}
	page := MustBrowse(t, s, baton.MessageBrowseParams{QueueID: q.ID, Now: base, Limit: 10})
	if len(page.Messages) != 1 {
		t.Fatalf("browse: got %v, want [%s]", ids(page.Messages), m.ID)
	}
	checkMessage(t, "browsed binary message", page.Messages[0], want)
	for _, sub := range []string{"\x80 body", "\xff\xfe\x00", "\xc3"} {
		got := MustBrowse(t, s, baton.MessageBrowseParams{QueueID: q.ID, Now: base, BodyContains: sub, Limit: 10})
		checkIDs(t, fmt.Sprintf("body holding %q", sub), got.Messages, m.ID)
	}
	got := MustBrowse(t, s, baton.MessageBrowseParams{QueueID: q.ID, Now: base, BodyContains: "\xc3\xa9", Limit: 10})
	checkIDs(t, "body holding é", got.Messages)
}

func testBrowseCursorStableUnderDeletes(t *testing.T, s baton.Store) {
	const n = 100
	q := mustCreate(t, s, 1, "orders")
	sendNumbered(t, s, q.ID, n)
	now := at(time.Hour)
	listed := make(map[string]bool)
	// gone are the messages deleted before any page listed them.
	gone := make(map[string]bool)
	var got []string
	p := baton.MessageBrowseParams{QueueID: q.ID, Now: now, Limit: 7}
	for pages := 0; ; pages++ {
		if pages > n {
			t.Fatal("browse does not end")
		}
		page := MustBrowse(t, s, p)
		for _, m := range page.Messages {
			if gone[m.ID] {
				t.Errorf("message %s listed after it was deleted", m.ID)
			}
			listed[m.ID] = true
			got = append(got, m.ID)
		}
		if page.Next == "" {
			break
		}
		// Between pages: delete the page's last message (the cursor's
		// own), the next one, and one further on.
		var k int
		last := page.Messages[len(page.Messages)-1].ID
		if _, err := fmt.Sscanf(last[len(last)-12:], "%d", &k); err != nil {
			t.Fatalf("message id %s: %v", last, err)
		}
		for _, i := range []int{k, k + 1, k + 5} {
			id := MessageID(i)
			if i > n || gone[id] {
				continue
			}
			MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: id, Now: now})
			if !listed[id] {
				gone[id] = true
			}
		}
		p.Cursor = page.Next
	}
	// Every message is listed once, in order, but for those deleted
	// before their page came.
	var want []string
	for _, id := range numberedOrder(n) {
		if !gone[id] {
			want = append(want, id)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("paging while deleting: got %v\nwant %v", got, want)
	}
}

func testBrowseInvalidCursor(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	MustSend(t, s, q.ID, NewMessage(1, base))
	for _, c := range []string{"!", "bm90IGEgY3Vyc29y", baton.BrowseKey{SentAt: base, ID: ""}.Cursor()} {
		_, err := s.MessageBrowse(t.Context(), baton.MessageBrowseParams{QueueID: q.ID, Now: base, Cursor: c, Limit: 10})
		if !errors.Is(err, baton.ErrInvalidCursor) {
			t.Errorf("cursor %q: got error %v, want ErrInvalidCursor", c, err)
		}
	}
}

func testBrowseUnknownQueue(t *testing.T, s baton.Store) {
	_, err := s.MessageBrowse(t.Context(), baton.MessageBrowseParams{QueueID: QueueID(9), Now: base, Limit: 10})
	checkErr(t, "browse an unknown queue", err, baton.ErrNotFound)
}
