// Package storetest is the conformance suite for baton.Store. Every
// implementation (memstore, the embedded SQLite store, the PostgreSQL store)
// calls Run from its own tests, so that the engine can rely on one behaviour
// whichever store persists its queues: the suite pins what store.go promises,
// method by method, including the lease arithmetic of receive, delete and
// visibility changes and the atomicity of receive under concurrency.
//
// The suite never sleeps and never reads a clock: every call gets an explicit
// time, measured from a fixed base in whole milliseconds, since a store may
// keep no finer precision. It compares times with time.Time.Equal and treats
// a nil map or slice as equal to an empty one, so stores that read values back
// from a database pass as long as they keep what was written.
package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// Accounts that own the suite's queues. Two, so that the suite can check that
// a queue's identity is (region, account, name).
const (
	Account      = "000000000000"
	OtherAccount = "111111111111"
)

// Regions of the suite's queues: most are in Region; OtherRegion is a
// namespace of its own, so that the suite can check that a region's queues
// are apart from another's.
const (
	Region      = "us-east-1"
	OtherRegion = "eu-central-1"
)

// base is the instant every timeline of the suite starts from.
var base = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// at is base plus d; d is always whole milliseconds.
func at(d time.Duration) time.Time { return base.Add(d) }

const (
	// lease is the suite's usual visibility timeout.
	lease = 30 * time.Second
	// retention is the default MessageRetentionPeriod; receives that do not
	// test retention pass now-retention as their cutoff.
	retention = 345600 * time.Second
	// recreateAfter is SQS's wait between deleting and re-creating a queue.
	recreateAfter = 60 * time.Second
)

// Run runs the conformance suite against the stores open returns. Each
// subtest calls open once for a store of its own, which must be empty, and
// runs in parallel with the others; Run closes the store when the subtest
// ends, so open should not.
func Run(t *testing.T, open func(t *testing.T) baton.Store) {
	t.Helper()
	for _, g := range groups() {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.fn(t, mustOpen(t, open))
				})
			}
		})
	}
}

type test struct {
	name string
	fn   func(t *testing.T, s baton.Store)
}

type group struct {
	name  string
	tests []test
}

func groups() []group {
	return []group{
		{"QueueCreate", []test{
			{"RoundTrip", testQueueCreateRoundTrip},
			{"Exists", testQueueCreateExists},
			{"DeletedRecently", testQueueCreateDeletedRecently},
			{"DeletedAtCutoff", testQueueCreateDeletedAtCutoff},
			{"DeletedBeforeCutoff", testQueueCreateDeletedBeforeCutoff},
			{"LatestDeletionCounts", testQueueCreateLatestDeletionCounts},
			{"KeepsNoReference", testQueueCreateKeepsNoReference},
			{"Concurrent", testQueueCreateConcurrent},
			{"RegionsAreSeparate", testQueueRegionsAreSeparate},
		}},
		{"QueueGet", []test{
			{"NotFound", testQueueGetNotFound},
			{"ReturnsCopy", testQueueGetReturnsCopy},
		}},
		{"QueueList", []test{
			{"Filters", testQueueListFilters},
			{"ReturnsCopies", testQueueListReturnsCopies},
		}},
		{"QueueUpdate", []test{
			{"Attributes", testQueueUpdateAttributes},
			{"Tags", testQueueUpdateTags},
			{"OtherAccountUntouched", testQueueUpdateOtherAccountUntouched},
			{"NotFound", testQueueUpdateNotFound},
		}},
		{"QueueDelete", []test{
			{"RemovesQueue", testQueueDeleteRemovesQueue},
			{"RemovesMessages", testQueueDeleteRemovesMessages},
			{"NotFound", testQueueDeleteNotFound},
		}},
		{"QueuePurge", []test{
			{"RemovesMessages", testQueuePurgeRemovesMessages},
			{"PurgedRecently", testQueuePurgePurgedRecently},
			{"NotFound", testQueuePurgeNotFound},
		}},
		{"MessageSend", []test{
			{"RoundTrip", testMessageSendRoundTrip},
			{"KeepsNoReference", testMessageSendKeepsNoReference},
			{"UnknownQueue", testMessageSendUnknownQueue},
		}},
		{"MessageReceive", []test{
			{"OnlyVisible", testMessageReceiveOnlyVisible},
			{"Max", testMessageReceiveMax},
			{"SendOrder", testMessageReceiveSendOrder},
			{"LapsedBeforeLaterSends", testMessageReceiveLapsedBeforeLaterSends},
			{"Lease", testMessageReceiveLease},
			{"VisibilityZero", testMessageReceiveVisibilityZero},
			{"Delayed", testMessageReceiveDelayed},
			{"Retention", testMessageReceiveRetention},
			{"RetentionNotCountedInMax", testMessageReceiveRetentionNotCountedInMax},
			{"ReturnsCopies", testMessageReceiveReturnsCopies},
			{"QueuesAreSeparate", testMessageReceiveQueuesAreSeparate},
			{"UnknownQueue", testMessageReceiveUnknownQueue},
		}},
		{"MessageDelete", []test{
			{"Current", testMessageDeleteCurrent},
			{"CurrentLastMillisecond", testMessageDeleteCurrentLastMillisecond},
			{"SupersededEpoch", testMessageDeleteSupersededEpoch},
			{"SupersededEpochRequireLive", testMessageDeleteSupersededEpochRequireLive},
			{"ExpiredLease", testMessageDeleteExpiredLease},
			{"ExpiredLeaseRequireLive", testMessageDeleteExpiredLeaseRequireLive},
			{"Gone", testMessageDeleteGone},
			{"UnknownQueue", testMessageDeleteUnknownQueue},
		}},
		{"MessageChangeVisibility", []test{
			{"Extend", testMessageChangeVisibilityExtend},
			{"ExtendKeepsLease", testMessageChangeVisibilityExtendKeepsLease},
			{"Shorten", testMessageChangeVisibilityShorten},
			{"Release", testMessageChangeVisibilityRelease},
			{"SupersededEpoch", testMessageChangeVisibilitySupersededEpoch},
			{"AnyLeaseSuperseded", testMessageChangeVisibilityAnyLeaseSuperseded},
			{"AnyLeaseNotInFlight", testMessageChangeVisibilityAnyLeaseNotInFlight},
			{"ExpiredLease", testMessageChangeVisibilityExpiredLease},
			{"AfterLaterRead", testMessageChangeVisibilityAfterLaterRead},
			{"Gone", testMessageChangeVisibilityGone},
			{"UnknownQueue", testMessageChangeVisibilityUnknownQueue},
		}},
		{"MessageDeleteBatch", []test{
			{"Mixed", testMessageDeleteBatchMixed},
			{"RequireLive", testMessageDeleteBatchRequireLive},
			{"UnknownQueue", testMessageDeleteBatchUnknownQueue},
		}},
		{"MessageChangeVisibilityBatch", []test{
			{"Mixed", testMessageChangeVisibilityBatchMixed},
			{"AnyLease", testMessageChangeVisibilityBatchAnyLease},
			{"Unreceive", testMessageChangeVisibilityBatchUnreceive},
			{"UnreceiveNoTime", testMessageChangeVisibilityBatchUnreceiveNoTime},
			{"UnknownQueue", testMessageChangeVisibilityBatchUnknownQueue},
		}},
		{"MessageMove", []test{
			{"Unleased", testMessageMoveUnleased},
			{"CurrentLease", testMessageMoveCurrentLease},
			{"SupersededEpoch", testMessageMoveSupersededEpoch},
			{"AtLeaseEnd", testMessageMoveAtLeaseEnd},
			{"ResetSentAt", testMessageMoveResetSentAt},
			{"ReplaceDedupID", testMessageMoveReplaceDedupID},
			{"Gone", testMessageMoveGone},
			{"UnknownQueue", testMessageMoveUnknownQueue},
		}},
		{"MessageStats", []test{
			{"Counts", testMessageStatsCounts},
			{"Bound", testMessageStatsBound},
			{"NextVisibleAtIsEarliest", testMessageStatsNextVisibleAtIsEarliest},
			{"Empty", testMessageStatsEmpty},
			{"UnknownQueue", testMessageStatsUnknownQueue},
		}},
		{"MessageExpire", []test{
			{"OnlyOlder", testMessageExpireOnlyOlder},
			{"UnknownQueue", testMessageExpireUnknownQueue},
		}},
		{"MoveTask", []test{
			{"RoundTrip", testMoveTaskRoundTrip},
			{"ReplaceByHandle", testMoveTaskReplaceByHandle},
			{"KeepsNewest", testMoveTaskKeepsNewest},
		}},
		{"FIFO", []test{
			{"GroupOrder", testFIFOGroupOrder},
			{"InFlightBlocksGroup", testFIFOInFlightBlocksGroup},
			{"ReleasedHeadComesFirst", testFIFOReleasedHeadComesFirst},
			{"DelayedDoesNotBlock", testFIFODelayedDoesNotBlock},
			{"FewestGroups", testFIFOFewestGroups},
			{"Dedup", testFIFODedup},
			{"DedupWithinOneSend", testFIFODedupWithinOneSend},
			{"SequenceNumbers", testFIFOSequenceNumbers},
			{"PurgeClearsDedup", testFIFOPurgeClearsDedup},
			{"ExpiredGroupsDoNotHide", testFIFOExpiredGroupsDoNotHide},
			{"GroupsWaitingLongestFirst", testFIFOGroupsWaitingLongestFirst},
			{"MoveThereAndBack", testFIFOMoveThereAndBack},
		}},
		{"Fair", []test{
			{"RoundRobin", testFairRoundRobin},
			{"UngroupedTenant", testFairUngroupedTenant},
			{"MixedLifecycle", testFairMixedLifecycle},
			{"NoisyTenantWaits", testFairNoisyTenantWaits},
			{"NoisyFewestInFlightFirst", testFairNoisyFewestInFlightFirst},
		}},
		{"Concurrency", []test{
			{"ReceiveLeasesOnce", testConcurrentReceiveLeasesOnce},
			{"FairReceiveLeasesOnce", testConcurrentFairReceiveLeasesOnce},
			{"SendAndReceive", testConcurrentSendAndReceive},
			{"DeleteOnce", testConcurrentDeleteOnce},
		}},
		{"MessageBrowse", browseTests},
	}
}

// ---------------------------------------------------------------------------
// Fixtures and helpers.

// QueueID returns the n-th queue id of a test. The top bit is set, as it is
// in half the engine's random ids, so a store must keep all 64 bits.
func QueueID(n int) uint64 { return 1<<63 | uint64(n) }

// MessageID returns the n-th message id of a test, in the engine's UUID form.
func MessageID(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

// NewQueue returns a standard queue of Account in Region with default
// attributes and no tags, created at the suite's base time.
func NewQueue(id uint64, name string) *baton.Queue {
	return &baton.Queue{
		ID:         id,
		Region:     Region,
		Account:    Account,
		Name:       name,
		Attributes: baton.DefaultQueueAttributes(),
		CreatedAt:  base,
		ModifiedAt: base,
	}
}

// NewMessage returns a plain message numbered n (see MessageID), sent and
// visible at sentAt.
func NewMessage(n int, sentAt time.Time) *baton.Message {
	return &baton.Message{
		ID:        MessageID(n),
		Body:      fmt.Sprintf("message %d", n),
		SenderID:  Account,
		SentAt:    sentAt,
		VisibleAt: sentAt,
	}
}

func mustOpen(t *testing.T, open func(t *testing.T) baton.Store) baton.Store {
	t.Helper()
	s := open(t)
	if s == nil {
		t.Fatal("open returned a nil store")
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return s
}

// MustCreateQueue stores q, refusing no name deleted more than a minute
// before q.CreatedAt, and fails the test on error.
func MustCreateQueue(tb testing.TB, s baton.Store, q *baton.Queue) {
	tb.Helper()
	err := s.QueueCreate(tb.Context(), baton.QueueCreateParams{Queue: q, DeletedCutoff: q.CreatedAt.Add(-recreateAfter)})
	if err != nil {
		tb.Fatalf("create queue %s/%s: %v", q.Account, q.Name, err)
	}
}

// MustGetQueue returns the queue of Region and fails the test on error.
func MustGetQueue(tb testing.TB, s baton.Store, account, name string) *baton.Queue {
	tb.Helper()
	q, err := s.QueueGet(tb.Context(), Region, account, name)
	if err != nil {
		tb.Fatalf("get queue %s/%s: %v", account, name, err)
	}
	return q
}

// MustSend stores msgs in the queue and fails the test on error.
func MustSend(tb testing.TB, s baton.Store, queueID uint64, msgs ...*baton.Message) {
	tb.Helper()
	if _, err := s.MessageSend(tb.Context(), baton.MessageSendParams{QueueID: queueID, Messages: msgs}); err != nil {
		tb.Fatalf("send %d messages: %v", len(msgs), err)
	}
}

// MustReceive receives and fails the test on error, on more than p.Max
// messages, or on a message returned twice by the one call.
func MustReceive(tb testing.TB, s baton.Store, p baton.MessageReceiveParams) []*baton.Message {
	tb.Helper()
	msgs, err := s.MessageReceive(tb.Context(), p)
	if err != nil {
		tb.Fatalf("receive at %v: %v", p.Now, err)
	}
	if len(msgs) > p.Max {
		tb.Errorf("receive at %v returned %d messages, want at most Max = %d", p.Now, len(msgs), p.Max)
	}
	seen := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		if seen[m.ID] {
			tb.Errorf("receive at %v returned message %s twice", p.Now, m.ID)
		}
		seen[m.ID] = true
	}
	return msgs
}

// MustDelete deletes by a receipt's lease and fails the test on error.
func MustDelete(tb testing.TB, s baton.Store, p baton.MessageDeleteParams) baton.LeaseOutcome {
	tb.Helper()
	out, err := s.MessageDelete(tb.Context(), p)
	if err != nil {
		tb.Fatalf("delete %s epoch %d at %v: %v", p.MessageID, p.Epoch, p.Now, err)
	}
	return out
}

// MustChangeVisibility changes a lease's end and fails the test on error.
func MustChangeVisibility(tb testing.TB, s baton.Store, p baton.MessageChangeVisibilityParams) baton.LeaseOutcome {
	tb.Helper()
	out, err := s.MessageChangeVisibility(tb.Context(), p)
	if err != nil {
		tb.Fatalf("change visibility of %s epoch %d at %v: %v", p.MessageID, p.Epoch, p.Now, err)
	}
	return out
}

// MustStats counts the queue's messages at now and fails the test on error.
func MustStats(tb testing.TB, s baton.Store, queueID uint64, now time.Time) baton.MessageStats {
	tb.Helper()
	st, err := s.MessageStats(tb.Context(), baton.MessageStatsParams{QueueID: queueID, Now: now})
	if err != nil {
		tb.Fatalf("stats at %v: %v", now, err)
	}
	return st
}

// mustReceive leases up to max messages from now until visibleAt, with the
// default retention.
func mustReceive(tb testing.TB, s baton.Store, queueID uint64, now, visibleAt time.Time, max int) []*baton.Message {
	tb.Helper()
	return MustReceive(tb, s, baton.MessageReceiveParams{
		QueueID: queueID, Now: now, Max: max, VisibleAt: visibleAt, RetentionCutoff: now.Add(-retention),
	})
}

// mustReceiveOne receives exactly one message, wantID.
func mustReceiveOne(tb testing.TB, s baton.Store, queueID uint64, now, visibleAt time.Time, wantID string) *baton.Message {
	tb.Helper()
	msgs := mustReceive(tb, s, queueID, now, visibleAt, 10)
	if len(msgs) != 1 || msgs[0].ID != wantID {
		tb.Fatalf("receive at %v: got %v, want [%s]", now, ids(msgs), wantID)
	}
	return msgs[0]
}

// mustCreate creates a standard queue numbered n.
func mustCreate(tb testing.TB, s baton.Store, n int, name string) *baton.Queue {
	tb.Helper()
	q := NewQueue(QueueID(n), name)
	MustCreateQueue(tb, s, q)
	return q
}

func ids(msgs []*baton.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// checkIDs compares the ids of msgs with want, in any order: the contract
// fixes no order among messages that became visible together.
func checkIDs(tb testing.TB, what string, msgs []*baton.Message, want ...string) {
	tb.Helper()
	got := ids(msgs)
	sort.Strings(got)
	want = slices.Clone(want)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		tb.Errorf("%s: got ids %v, want %v", what, got, want)
	}
}

func checkStats(tb testing.TB, what string, got, want baton.MessageStats) {
	tb.Helper()
	if got.Visible != want.Visible || got.InFlight != want.InFlight || got.Delayed != want.Delayed ||
		!got.NextVisibleAt.Equal(want.NextVisibleAt) {
		tb.Errorf("%s: got stats %s, want %s", what, fmtStats(got), fmtStats(want))
	}
}

func fmtStats(st baton.MessageStats) string {
	next := "zero"
	if !st.NextVisibleAt.IsZero() {
		next = st.NextVisibleAt.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("{Visible:%d InFlight:%d Delayed:%d NextVisibleAt:%s}", st.Visible, st.InFlight, st.Delayed, next)
}

func resultName(r baton.LeaseResult) string {
	switch r {
	case baton.LeaseCurrent:
		return "LeaseCurrent"
	case baton.LeaseLapsed:
		return "LeaseLapsed"
	case baton.LeaseGone:
		return "LeaseGone"
	case baton.LeaseSuperseded:
		return "LeaseSuperseded"
	}
	return fmt.Sprintf("LeaseResult(%d)", int(r))
}

func checkResult(tb testing.TB, what string, got baton.LeaseOutcome, want baton.LeaseResult) {
	tb.Helper()
	if got.Result != want {
		tb.Errorf("%s: got result %s, want %s", what, resultName(got.Result), resultName(want))
	}
	if want == baton.LeaseGone && got.Message != nil {
		tb.Errorf("%s: got message %s for a gone message, want nil", what, got.Message.ID)
	}
	if want != baton.LeaseGone && got.Message == nil {
		tb.Errorf("%s: got nil message, want the message's state before the call", what)
	}
}

func checkErr(tb testing.TB, what string, got, want error) {
	tb.Helper()
	if !errors.Is(got, want) {
		tb.Errorf("%s: got error %v, want %v", what, got, want)
	}
}

// leased returns a copy of m in the state a receive leaves it in.
func leased(m *baton.Message, receiveCount int, epoch uint32, firstReceivedAt, leasedAt, visibleAt time.Time) *baton.Message {
	c := *m
	c.Leased = true
	c.ReceiveCount = receiveCount
	c.Epoch = epoch
	c.FirstReceivedAt = firstReceivedAt
	c.LeasedAt = leasedAt
	c.VisibleAt = visibleAt
	return &c
}

// checkMessage compares every field of got with want.
func checkMessage(tb testing.TB, what string, got, want *baton.Message) {
	tb.Helper()
	if got == nil {
		tb.Errorf("%s: got nil message, want %s", what, want.ID)
		return
	}
	for _, d := range diffMessage(got, want) {
		tb.Errorf("%s: %s", what, d)
	}
}

func diffMessage(got, want *baton.Message) []string {
	var d []string
	str := func(field, g, w string) {
		if g != w {
			d = append(d, fmt.Sprintf("%s = %s, want %s", field, short(g), short(w)))
		}
	}
	tm := func(field string, g, w time.Time) {
		if !g.Equal(w) {
			d = append(d, fmt.Sprintf("%s = %v, want %v", field, g, w))
		}
	}
	str("ID", got.ID, want.ID)
	str("Body", got.Body, want.Body)
	str("BodyMD5", got.BodyMD5, want.BodyMD5)
	d = append(d, diffAttributes(got.Attributes, want.Attributes)...)
	str("TraceHeader", got.TraceHeader, want.TraceHeader)
	str("GroupID", got.GroupID, want.GroupID)
	str("DedupID", got.DedupID, want.DedupID)
	str("SequenceNumber", got.SequenceNumber, want.SequenceNumber)
	str("SenderID", got.SenderID, want.SenderID)
	tm("SentAt", got.SentAt, want.SentAt)
	str("DeadLetterSourceARN", got.DeadLetterSourceARN, want.DeadLetterSourceARN)
	tm("VisibleAt", got.VisibleAt, want.VisibleAt)
	if got.Leased != want.Leased {
		d = append(d, fmt.Sprintf("Leased = %v, want %v", got.Leased, want.Leased))
	}
	if got.ReceiveCount != want.ReceiveCount {
		d = append(d, fmt.Sprintf("ReceiveCount = %d, want %d", got.ReceiveCount, want.ReceiveCount))
	}
	tm("FirstReceivedAt", got.FirstReceivedAt, want.FirstReceivedAt)
	if got.Epoch != want.Epoch {
		d = append(d, fmt.Sprintf("Epoch = %d, want %d", got.Epoch, want.Epoch))
	}
	tm("LeasedAt", got.LeasedAt, want.LeasedAt)
	return d
}

func diffAttributes(got, want map[string]baton.MessageAttribute) []string {
	var d []string
	names := make([]string, 0, len(got)+len(want))
	for n := range got {
		names = append(names, n)
	}
	for n := range want {
		if _, ok := got[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		g, gok := got[n]
		w, wok := want[n]
		switch {
		case !wok:
			d = append(d, fmt.Sprintf("Attributes[%q] present, want absent", n))
		case !gok:
			d = append(d, fmt.Sprintf("Attributes[%q] absent, want %+v", n, w))
		case g.DataType != w.DataType || g.StringValue != w.StringValue || !bytes.Equal(g.BinaryValue, w.BinaryValue):
			d = append(d, fmt.Sprintf("Attributes[%q] = %+v, want %+v", n, g, w))
		}
	}
	return d
}

// short quotes s, eliding the middle of long strings such as big bodies.
func short(s string) string {
	if len(s) <= 80 {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q…%q (%d bytes)", s[:32], s[len(s)-32:], len(s))
}

// checkQueue compares every field of got with want.
func checkQueue(tb testing.TB, what string, got, want *baton.Queue) {
	tb.Helper()
	if got == nil {
		tb.Errorf("%s: got nil queue, want %s", what, want.Name)
		return
	}
	if got.ID != want.ID {
		tb.Errorf("%s: ID = %#x, want %#x", what, got.ID, want.ID)
	}
	if got.Region != want.Region || got.Account != want.Account || got.Name != want.Name {
		tb.Errorf("%s: queue = %s/%s/%s, want %s/%s/%s", what, got.Region, got.Account, got.Name, want.Region, want.Account, want.Name)
	}
	if got.Attributes != want.Attributes {
		tb.Errorf("%s: Attributes = %+v, want %+v", what, got.Attributes, want.Attributes)
	}
	if !sameTags(got.Tags, want.Tags) {
		tb.Errorf("%s: Tags = %v, want %v", what, got.Tags, want.Tags)
	}
	for _, f := range []struct {
		name      string
		got, want time.Time
	}{
		{"CreatedAt", got.CreatedAt, want.CreatedAt},
		{"ModifiedAt", got.ModifiedAt, want.ModifiedAt},
		{"PurgedAt", got.PurgedAt, want.PurgedAt},
	} {
		if !f.got.Equal(f.want) {
			tb.Errorf("%s: %s = %v, want %v", what, f.name, f.got, f.want)
		}
	}
}

// sameTags treats nil and empty tag maps as equal.
func sameTags(got, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			return false
		}
	}
	return true
}

func cloneQueue(q *baton.Queue) *baton.Queue {
	c := *q
	if q.Tags != nil {
		c.Tags = make(map[string]string, len(q.Tags))
		for k, v := range q.Tags {
			c.Tags[k] = v
		}
	}
	return &c
}

func cloneMessage(m *baton.Message) *baton.Message {
	c := *m
	if m.Attributes != nil {
		c.Attributes = make(map[string]baton.MessageAttribute, len(m.Attributes))
		for k, a := range m.Attributes {
			a.BinaryValue = bytes.Clone(a.BinaryValue)
			c.Attributes[k] = a
		}
	}
	return &c
}

// fullMessage returns a message numbered n with every field a client can set.
func fullMessage(n int, sentAt time.Time) *baton.Message {
	return &baton.Message{
		ID:   MessageID(n),
		Body: "héllo, wörld ✓ 🚀\n\t<xml a=\"1\"> & 'quotes'\r\n",
		// A store keeps the digest as given; it need not be right.
		BodyMD5: "0123456789abcdef0123456789abcdef",
		Attributes: map[string]baton.MessageAttribute{
			"Str":       {DataType: "String", StringValue: "value ✓"},
			"Num":       {DataType: "Number", StringValue: "-12.5e3"},
			"Bin":       {DataType: "Binary", BinaryValue: []byte{0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff}},
			"Labelled":  {DataType: "String.custom-label", StringValue: "labelled"},
			"BinCustom": {DataType: "Binary.png", BinaryValue: []byte("\x89PNG\r\n\x1a\n\x00")},
		},
		TraceHeader:    "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
		GroupID:        "group-1",
		DedupID:        "dedup-1",
		SequenceNumber: "18849496460467696128",
		SenderID:       "AIDAEXAMPLE123",
		SentAt:         sentAt,
		// Set by moves, but a field like any other.
		DeadLetterSourceARN: "arn:aws:sqs:us-east-1:000000000000:source",
		VisibleAt:           sentAt,
	}
}

// ---------------------------------------------------------------------------
// QueueCreate

func testQueueCreateRoundTrip(t *testing.T, s baton.Store) {
	full := &baton.Queue{
		ID:      QueueID(1),
		Region:  OtherRegion,
		Account: Account,
		Name:    "orders.fifo",
		Attributes: baton.QueueAttributes{
			DelaySeconds:                  5,
			MaximumMessageSize:            2048,
			MessageRetentionPeriod:        600,
			ReceiveMessageWaitTimeSeconds: 20,
			VisibilityTimeout:             45,
			Policy:                        `{"Version":"2012-10-17","Statement":[]}`,
			RedrivePolicy:                 `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":3}`,
			RedriveAllowPolicy:            `{"redrivePermission":"allowAll"}`,
			KmsMasterKeyID:                "alias/aws/sqs",
			KmsDataKeyReusePeriodSeconds:  600,
			SqsManagedSseEnabled:          true,
			FifoQueue:                     true,
			ContentBasedDeduplication:     true,
			DeduplicationScope:            "messageGroup",
			FifoThroughputLimit:           "perMessageGroupId",
		},
		Tags:       map[string]string{"team": "billing", "env": "test ✓", "empty": ""},
		CreatedAt:  at(1500 * time.Millisecond),
		ModifiedAt: at(2500 * time.Millisecond),
	}
	// bare has every field a store might be tempted to default left zero.
	bare := &baton.Queue{ID: QueueID(2), Region: Region, Account: Account, Name: "bare", CreatedAt: base, ModifiedAt: base}
	// maxID has every bit of the id set.
	maxID := NewQueue(^uint64(0), "max-id")
	for _, q := range []*baton.Queue{full, bare, maxID} {
		MustCreateQueue(t, s, cloneQueue(q))
	}
	for _, q := range []*baton.Queue{full, bare, maxID} {
		got, err := s.QueueGet(t.Context(), q.Region, q.Account, q.Name)
		if err != nil {
			t.Fatalf("get %s: %v", q.Name, err)
		}
		checkQueue(t, "get "+q.Name, got, q)
	}
}

func testQueueCreateExists(t *testing.T, s baton.Store) {
	first := NewQueue(QueueID(1), "orders")
	first.Tags = map[string]string{"first": "yes"}
	MustCreateQueue(t, s, cloneQueue(first))

	second := NewQueue(QueueID(2), "orders")
	second.Attributes.VisibilityTimeout = 99
	err := s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: second, DeletedCutoff: at(-recreateAfter)})
	checkErr(t, "create orders again", err, baton.ErrExists)
	checkQueue(t, "get orders after refused create", MustGetQueue(t, s, Account, "orders"), first)

	// The name is per account.
	other := NewQueue(QueueID(3), "orders")
	other.Account = OtherAccount
	MustCreateQueue(t, s, cloneQueue(other))
	checkQueue(t, "get other account's orders", MustGetQueue(t, s, OtherAccount, "orders"), other)
	checkQueue(t, "get orders", MustGetQueue(t, s, Account, "orders"), first)

	// And per region.
	elsewhere := NewQueue(QueueID(4), "orders")
	elsewhere.Region = OtherRegion
	MustCreateQueue(t, s, cloneQueue(elsewhere))
	got, err := s.QueueGet(t.Context(), OtherRegion, Account, "orders")
	if err != nil {
		t.Fatalf("get other region's orders: %v", err)
	}
	checkQueue(t, "get other region's orders", got, elsewhere)
	checkQueue(t, "get orders", MustGetQueue(t, s, Account, "orders"), first)
}

// testQueueRegionsAreSeparate checks that each region is a namespace of its
// own: the queues of one name in two regions are two queues, which every
// queue-level call tells apart, and a deletion refuses the name for a minute
// in its own region only.
func testQueueRegionsAreSeparate(t *testing.T, s baton.Store) {
	home := NewQueue(QueueID(1), "orders")
	away := NewQueue(QueueID(2), "orders")
	away.Region = OtherRegion
	away.Attributes.VisibilityTimeout = 60
	MustCreateQueue(t, s, cloneQueue(home))
	MustCreateQueue(t, s, cloneQueue(away))
	get := func(region string) (*baton.Queue, error) { return s.QueueGet(t.Context(), region, Account, "orders") }
	if got, err := get(OtherRegion); err != nil {
		t.Fatalf("get %s orders: %v", OtherRegion, err)
	} else {
		checkQueue(t, "get "+OtherRegion+" orders", got, away)
	}
	_, err := s.QueueGet(t.Context(), "ap-south-1", Account, "orders")
	checkErr(t, "get orders of a region without queues", err, baton.ErrNotFound)

	// An update, a purge, a deletion of one leaves the other alone.
	attrs := home.Attributes
	attrs.DelaySeconds = 9
	if _, err := s.QueueUpdate(t.Context(), baton.QueueUpdateParams{
		Region: Region, Account: Account, Name: "orders", Attributes: &attrs, TagsSet: map[string]string{"a": "1"}, ModifiedAt: at(time.Second),
	}); err != nil {
		t.Fatalf("update %s orders: %v", Region, err)
	}
	MustSend(t, s, away.ID, NewMessage(1, base))
	if err := s.QueuePurge(t.Context(), baton.QueuePurgeParams{Region: Region, Account: Account, Name: "orders", Now: at(time.Second), PurgedCutoff: at(-time.Minute)}); err != nil {
		t.Fatalf("purge %s orders: %v", Region, err)
	}
	checkStats(t, OtherRegion+" orders after the purge of "+Region+"'s", MustStats(t, s, away.ID, at(time.Second)), baton.MessageStats{Visible: 1, OldestSentAt: base})
	if err := s.QueueDelete(t.Context(), Region, Account, "orders", at(2*time.Second)); err != nil {
		t.Fatalf("delete %s orders: %v", Region, err)
	}
	if got, err := get(OtherRegion); err != nil {
		t.Fatalf("get %s orders after the deletion of %s's: %v", OtherRegion, Region, err)
	} else {
		checkQueue(t, OtherRegion+" orders after changes to "+Region+"'s", got, away)
	}
	_, err = get(Region)
	checkErr(t, "get deleted orders", err, baton.ErrNotFound)
	checkErr(t, "delete it again", s.QueueDelete(t.Context(), Region, Account, "orders", at(3*time.Second)), baton.ErrNotFound)

	// The deleted name is refused in its region alone.
	again := NewQueue(QueueID(3), "orders")
	again.CreatedAt = at(3 * time.Second)
	err = s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: again, DeletedCutoff: at(3*time.Second - recreateAfter)})
	checkErr(t, "re-create deleted orders at once", err, baton.ErrDeletedRecently)
	third := NewQueue(QueueID(4), "orders")
	third.Region = "ap-south-1"
	if err := s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: third, DeletedCutoff: at(3*time.Second - recreateAfter)}); err != nil {
		t.Fatalf("create orders in a third region after the deletion: %v", err)
	}
}

func testQueueCreateDeletedRecently(t *testing.T, s baton.Store) {
	mustCreate(t, s, 1, "orders")
	mustCreate(t, s, 2, "invoices")
	other := NewQueue(QueueID(3), "orders")
	other.Account = OtherAccount
	MustCreateQueue(t, s, other)
	if err := s.QueueDelete(t.Context(), Region, Account, "orders", at(10*time.Second)); err != nil {
		t.Fatalf("delete orders: %v", err)
	}
	if err := s.QueueDelete(t.Context(), Region, OtherAccount, "orders", at(10*time.Second)); err != nil {
		t.Fatalf("delete other account's orders: %v", err)
	}

	again := NewQueue(QueueID(4), "orders")
	again.CreatedAt = at(10*time.Second + time.Millisecond)
	err := s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: again, DeletedCutoff: at(10*time.Second - time.Millisecond)})
	checkErr(t, "create orders deleted 1ms after the cutoff", err, baton.ErrDeletedRecently)
	_, err = s.QueueGet(t.Context(), Region, Account, "orders")
	checkErr(t, "get orders after refused create", err, baton.ErrNotFound)

	// Another name, and the same name in an account where it was deleted
	// long enough ago, are not refused.
	fresh := NewQueue(QueueID(5), "orders2")
	if err := s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: fresh, DeletedCutoff: at(10*time.Second - time.Millisecond)}); err != nil {
		t.Errorf("create never-deleted orders2 with the same cutoff: got error %v, want nil", err)
	}
	elsewhere := NewQueue(QueueID(6), "orders")
	elsewhere.Account = OtherAccount
	if err := s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: elsewhere, DeletedCutoff: at(11 * time.Second)}); err != nil {
		t.Errorf("create other account's orders with a cutoff after its deletion: got error %v, want nil", err)
	}
	_, err = s.QueueGet(t.Context(), Region, Account, "orders")
	checkErr(t, "get orders after creating it in another account", err, baton.ErrNotFound)
}

func testQueueCreateDeletedAtCutoff(t *testing.T, s baton.Store) {
	mustCreate(t, s, 1, "orders")
	if err := s.QueueDelete(t.Context(), Region, Account, "orders", at(10*time.Second)); err != nil {
		t.Fatalf("delete orders: %v", err)
	}
	// Deleted at the cutoff is not deleted after it.
	again := NewQueue(QueueID(2), "orders")
	again.CreatedAt = at(70 * time.Second)
	if err := s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: again, DeletedCutoff: at(10 * time.Second)}); err != nil {
		t.Fatalf("create orders deleted exactly at the cutoff: got error %v, want nil", err)
	}
	checkQueue(t, "get re-created orders", MustGetQueue(t, s, Account, "orders"), again)
}

func testQueueCreateDeletedBeforeCutoff(t *testing.T, s baton.Store) {
	mustCreate(t, s, 1, "orders")
	if err := s.QueueDelete(t.Context(), Region, Account, "orders", at(10*time.Second)); err != nil {
		t.Fatalf("delete orders: %v", err)
	}
	again := NewQueue(QueueID(2), "orders")
	again.CreatedAt = at(5 * time.Minute)
	if err := s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: again, DeletedCutoff: at(4 * time.Minute)}); err != nil {
		t.Fatalf("create orders deleted before the cutoff: got error %v, want nil", err)
	}
	checkQueue(t, "get re-created orders", MustGetQueue(t, s, Account, "orders"), again)
}

func testQueueCreateLatestDeletionCounts(t *testing.T, s baton.Store) {
	mustCreate(t, s, 1, "orders")
	if err := s.QueueDelete(t.Context(), Region, Account, "orders", at(10*time.Second)); err != nil {
		t.Fatalf("delete orders: %v", err)
	}
	if err := s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: NewQueue(QueueID(2), "orders"), DeletedCutoff: at(10 * time.Second)}); err != nil {
		t.Fatalf("re-create orders: %v", err)
	}
	if err := s.QueueDelete(t.Context(), Region, Account, "orders", at(100*time.Second)); err != nil {
		t.Fatalf("delete orders again: %v", err)
	}
	// The first deletion is before the cutoff, the second after it.
	err := s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: NewQueue(QueueID(3), "orders"), DeletedCutoff: at(50 * time.Second)})
	checkErr(t, "create orders after its second deletion", err, baton.ErrDeletedRecently)
}

func testQueueCreateKeepsNoReference(t *testing.T, s baton.Store) {
	q := NewQueue(QueueID(1), "orders")
	q.Tags = map[string]string{"team": "billing"}
	want := cloneQueue(q)
	MustCreateQueue(t, s, q)
	q.Tags["team"] = "changed"
	q.Tags["added"] = "yes"
	q.Name = "renamed"
	q.Attributes.VisibilityTimeout = 999
	checkQueue(t, "get orders after changing the created value", MustGetQueue(t, s, Account, "orders"), want)
}

func testQueueCreateConcurrent(t *testing.T, s baton.Store) {
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: NewQueue(QueueID(i+1), "orders"), DeletedCutoff: at(-recreateAfter)})
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("create %d and create %d both succeeded, want one", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, baton.ErrExists):
			t.Errorf("create %d: got error %v, want nil or %v", i, err, baton.ErrExists)
		}
	}
	if winner < 0 {
		t.Fatalf("no create succeeded, want one")
	}
	if got := MustGetQueue(t, s, Account, "orders"); got.ID != QueueID(winner+1) {
		t.Errorf("get orders: ID = %#x, want the successful create's %#x", got.ID, QueueID(winner+1))
	}
}

// ---------------------------------------------------------------------------
// QueueGet

func testQueueGetNotFound(t *testing.T, s baton.Store) {
	_, err := s.QueueGet(t.Context(), Region, Account, "orders")
	checkErr(t, "get from an empty store", err, baton.ErrNotFound)
	mustCreate(t, s, 1, "orders")
	for _, c := range []struct{ account, name string }{
		{OtherAccount, "orders"},
		{Account, "order"},
		{Account, "orders2"},
		{Account, "Orders"},
		{Account, ""},
	} {
		_, err := s.QueueGet(t.Context(), Region, c.account, c.name)
		checkErr(t, fmt.Sprintf("get %s/%q", c.account, c.name), err, baton.ErrNotFound)
	}
}

func testQueueGetReturnsCopy(t *testing.T, s baton.Store) {
	q := NewQueue(QueueID(1), "orders")
	q.Tags = map[string]string{"team": "billing"}
	MustCreateQueue(t, s, cloneQueue(q))

	got := MustGetQueue(t, s, Account, "orders")
	got.Tags["team"] = "changed"
	got.Tags["added"] = "yes"
	got.Attributes.VisibilityTimeout = 999
	got.Name = "renamed"
	got.PurgedAt = at(time.Hour)
	checkQueue(t, "get after changing an earlier result", MustGetQueue(t, s, Account, "orders"), q)
}

// ---------------------------------------------------------------------------
// QueueList

func testQueueListFilters(t *testing.T, s baton.Store) {
	// Created out of order; the names sort the same bytewise and under any
	// common collation.
	for i, name := range []string{"gamma", "alpha", "beta2", "delta", "beta"} {
		mustCreate(t, s, i+1, name)
	}
	for i, name := range []string{"alpha", "aardvark"} {
		q := NewQueue(QueueID(10+i), name)
		q.Account = OtherAccount
		MustCreateQueue(t, s, q)
	}
	for i, name := range []string{"epsilon", "alpha"} {
		q := NewQueue(QueueID(20+i), name)
		q.Region = OtherRegion
		MustCreateQueue(t, s, q)
	}
	for _, c := range []struct {
		name string
		p    baton.QueueListParams
		want []string
	}{
		{"all", baton.QueueListParams{Region: Region, Account: Account}, []string{"alpha", "beta", "beta2", "delta", "gamma"}},
		{"other account", baton.QueueListParams{Region: Region, Account: OtherAccount}, []string{"aardvark", "alpha"}},
		{"unknown account", baton.QueueListParams{Region: Region, Account: "222222222222"}, nil},
		{"other region", baton.QueueListParams{Region: OtherRegion, Account: Account}, []string{"alpha", "epsilon"}},
		{"unknown region", baton.QueueListParams{Region: "ap-south-1", Account: Account}, nil},
		{"every region", baton.QueueListParams{Account: Account}, []string{"alpha", "alpha", "beta", "beta2", "delta", "epsilon", "gamma"}},
		{"every region after a name", baton.QueueListParams{Account: Account, After: "delta", Limit: 1}, []string{"epsilon"}},
		{"prefix", baton.QueueListParams{Region: Region, Account: Account, Prefix: "beta"}, []string{"beta", "beta2"}},
		{"prefix matching nothing", baton.QueueListParams{Region: Region, Account: Account, Prefix: "zeta"}, nil},
		{"prefix is a whole name", baton.QueueListParams{Region: Region, Account: Account, Prefix: "gamma"}, []string{"gamma"}},
		{"after a name", baton.QueueListParams{Region: Region, Account: Account, After: "beta"}, []string{"beta2", "delta", "gamma"}},
		{"after a non-name", baton.QueueListParams{Region: Region, Account: Account, After: "c"}, []string{"delta", "gamma"}},
		{"after the last", baton.QueueListParams{Region: Region, Account: Account, After: "gamma"}, nil},
		{"limit", baton.QueueListParams{Region: Region, Account: Account, Limit: 2}, []string{"alpha", "beta"}},
		{"limit above count", baton.QueueListParams{Region: Region, Account: Account, Limit: 10}, []string{"alpha", "beta", "beta2", "delta", "gamma"}},
		{"prefix and after", baton.QueueListParams{Region: Region, Account: Account, Prefix: "b", After: "beta"}, []string{"beta2"}},
		{"prefix and limit", baton.QueueListParams{Region: Region, Account: Account, Prefix: "beta", Limit: 1}, []string{"beta"}},
		{"after and limit", baton.QueueListParams{Region: Region, Account: Account, After: "beta", Limit: 2}, []string{"beta2", "delta"}},
	} {
		qs, err := s.QueueList(t.Context(), c.p)
		if err != nil {
			t.Errorf("list %s: %v", c.name, err)
			continue
		}
		got := make([]string, len(qs))
		for i, q := range qs {
			got[i] = q.Name
			if q.Account != c.p.Account {
				t.Errorf("list %s: queue %s has account %s, want %s", c.name, q.Name, q.Account, c.p.Account)
			}
			if c.p.Region != "" && q.Region != c.p.Region {
				t.Errorf("list %s: queue %s has region %s, want %s", c.name, q.Name, q.Region, c.p.Region)
			}
			// Of one name, the queues come in region order.
			if i > 0 && qs[i-1].Name == q.Name && qs[i-1].Account == q.Account && qs[i-1].Region >= q.Region {
				t.Errorf("list %s: %s of %s listed after %s's", c.name, q.Name, q.Region, qs[i-1].Region)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("list %s: got %v, want %v", c.name, got, c.want)
		}
	}

	// Listed queues carry their fields, not just names.
	want := NewQueue(QueueID(5), "beta")
	qs, err := s.QueueList(t.Context(), baton.QueueListParams{Region: Region, Account: Account, Prefix: "beta", Limit: 1})
	if err != nil || len(qs) != 1 {
		t.Fatalf("list beta: got %d queues, error %v; want 1 queue", len(qs), err)
	}
	checkQueue(t, "listed beta", qs[0], want)
}

func testQueueListReturnsCopies(t *testing.T, s baton.Store) {
	q := NewQueue(QueueID(1), "orders")
	q.Tags = map[string]string{"team": "billing"}
	MustCreateQueue(t, s, cloneQueue(q))
	qs, err := s.QueueList(t.Context(), baton.QueueListParams{Region: Region, Account: Account})
	if err != nil || len(qs) != 1 {
		t.Fatalf("list: got %d queues, error %v; want 1 queue", len(qs), err)
	}
	qs[0].Tags["team"] = "changed"
	qs[0].Attributes.DelaySeconds = 7
	checkQueue(t, "get after changing a listed queue", MustGetQueue(t, s, Account, "orders"), q)
}

// ---------------------------------------------------------------------------
// QueueUpdate

func testQueueUpdateAttributes(t *testing.T, s baton.Store) {
	q := NewQueue(QueueID(1), "orders")
	q.Tags = map[string]string{"team": "billing"}
	MustCreateQueue(t, s, cloneQueue(q))

	attrs := q.Attributes
	attrs.VisibilityTimeout = 60
	attrs.DelaySeconds = 10
	attrs.RedrivePolicy = `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":5}`
	attrs.SqsManagedSseEnabled = false
	got, err := s.QueueUpdate(t.Context(), baton.QueueUpdateParams{
		Region: Region, Account: Account, Name: "orders", Attributes: &attrs, ModifiedAt: at(5 * time.Second),
	})
	if err != nil {
		t.Fatalf("update attributes: %v", err)
	}
	want := cloneQueue(q)
	want.Attributes = attrs
	want.ModifiedAt = at(5 * time.Second)
	checkQueue(t, "queue returned by update", got, want)
	checkQueue(t, "get after update", MustGetQueue(t, s, Account, "orders"), want)

	// Changing the caller's attributes afterwards changes nothing stored.
	attrs.VisibilityTimeout = 999
	checkQueue(t, "get after changing the update's attributes", MustGetQueue(t, s, Account, "orders"), want)
	// Nor does changing the returned queue.
	got.Attributes.DelaySeconds = 999
	got.Tags["team"] = "changed"
	checkQueue(t, "get after changing the update's result", MustGetQueue(t, s, Account, "orders"), want)
}

func testQueueUpdateTags(t *testing.T, s baton.Store) {
	q := NewQueue(QueueID(1), "orders") // no tags yet
	MustCreateQueue(t, s, cloneQueue(q))
	want := cloneQueue(q)

	steps := []struct {
		name string
		p    baton.QueueUpdateParams
		want map[string]string
	}{
		{"set on an untagged queue", baton.QueueUpdateParams{TagsSet: map[string]string{"a": "1", "b": "2", "c": "3"}, ModifiedAt: at(1 * time.Second)},
			map[string]string{"a": "1", "b": "2", "c": "3"}},
		{"set overwrites and adds", baton.QueueUpdateParams{TagsSet: map[string]string{"b": "20", "d": "4"}, ModifiedAt: at(2 * time.Second)},
			map[string]string{"a": "1", "b": "20", "c": "3", "d": "4"}},
		{"delete, including a missing key", baton.QueueUpdateParams{TagsDelete: []string{"a", "missing"}, ModifiedAt: at(3 * time.Second)},
			map[string]string{"b": "20", "c": "3", "d": "4"}},
		{"set and delete other keys at once", baton.QueueUpdateParams{TagsSet: map[string]string{"e": "5"}, TagsDelete: []string{"c"}, ModifiedAt: at(4 * time.Second)},
			map[string]string{"b": "20", "d": "4", "e": "5"}},
		{"delete every tag", baton.QueueUpdateParams{TagsDelete: []string{"b", "d", "e"}, ModifiedAt: at(5 * time.Second)},
			map[string]string{}},
	}
	for _, st := range steps {
		p := st.p
		p.Region, p.Account, p.Name = Region, Account, "orders"
		got, err := s.QueueUpdate(t.Context(), p)
		if err != nil {
			t.Fatalf("update (%s): %v", st.name, err)
		}
		want.Tags = st.want
		want.ModifiedAt = st.p.ModifiedAt
		checkQueue(t, "queue returned by update ("+st.name+")", got, want)
		checkQueue(t, "get after update ("+st.name+")", MustGetQueue(t, s, Account, "orders"), want)
	}

	// MaxTags counts the tags after the update: keys set again and keys
	// deleted count as they will stand; one more is refused, and changes
	// nothing.
	bound := []struct {
		name string
		p    baton.QueueUpdateParams
		err  error
		want map[string]string
	}{
		{"up to the bound", baton.QueueUpdateParams{TagsSet: map[string]string{"a": "1", "b": "2"}, MaxTags: 2, ModifiedAt: at(6 * time.Second)},
			nil, map[string]string{"a": "1", "b": "2"}},
		{"a key set again", baton.QueueUpdateParams{TagsSet: map[string]string{"b": "3"}, MaxTags: 2, ModifiedAt: at(7 * time.Second)},
			nil, map[string]string{"a": "1", "b": "3"}},
		{"one over", baton.QueueUpdateParams{TagsSet: map[string]string{"c": "4"}, MaxTags: 2, ModifiedAt: at(8 * time.Second)},
			baton.ErrTooManyTags, map[string]string{"a": "1", "b": "3"}},
		{"one in, one out", baton.QueueUpdateParams{TagsSet: map[string]string{"c": "4"}, TagsDelete: []string{"a"}, MaxTags: 2, ModifiedAt: at(9 * time.Second)},
			nil, map[string]string{"b": "3", "c": "4"}},
	}
	for _, st := range bound {
		p := st.p
		p.Region, p.Account, p.Name = Region, Account, "orders"
		_, err := s.QueueUpdate(t.Context(), p)
		if !errors.Is(err, st.err) || st.err == nil && err != nil {
			t.Fatalf("update (%s): %v, want %v", st.name, err, st.err)
		}
		if err == nil {
			want.ModifiedAt = st.p.ModifiedAt
		}
		want.Tags = st.want
		checkQueue(t, "get after update ("+st.name+")", MustGetQueue(t, s, Account, "orders"), want)
	}
}

func testQueueUpdateOtherAccountUntouched(t *testing.T, s baton.Store) {
	mine := NewQueue(QueueID(1), "orders")
	theirs := NewQueue(QueueID(2), "orders")
	theirs.Account = OtherAccount
	theirs.Tags = map[string]string{"owner": "them"}
	MustCreateQueue(t, s, cloneQueue(mine))
	MustCreateQueue(t, s, cloneQueue(theirs))

	attrs := mine.Attributes
	attrs.VisibilityTimeout = 77
	if _, err := s.QueueUpdate(t.Context(), baton.QueueUpdateParams{
		Region: Region, Account: Account, Name: "orders", Attributes: &attrs,
		TagsSet: map[string]string{"owner": "me"}, ModifiedAt: at(time.Second),
	}); err != nil {
		t.Fatalf("update orders: %v", err)
	}
	checkQueue(t, "get other account's orders", MustGetQueue(t, s, OtherAccount, "orders"), theirs)
}

func testQueueUpdateNotFound(t *testing.T, s baton.Store) {
	update := func(account, name string) error {
		_, err := s.QueueUpdate(t.Context(), baton.QueueUpdateParams{
			Region: Region, Account: account, Name: name, TagsSet: map[string]string{"a": "1"}, ModifiedAt: at(time.Second),
		})
		return err
	}
	checkErr(t, "update in an empty store", update(Account, "orders"), baton.ErrNotFound)
	mustCreate(t, s, 1, "orders")
	checkErr(t, "update another account's orders", update(OtherAccount, "orders"), baton.ErrNotFound)
	if err := s.QueueDelete(t.Context(), Region, Account, "orders", at(time.Second)); err != nil {
		t.Fatalf("delete orders: %v", err)
	}
	checkErr(t, "update deleted orders", update(Account, "orders"), baton.ErrNotFound)
}

// ---------------------------------------------------------------------------
// QueueDelete

func testQueueDeleteRemovesQueue(t *testing.T, s baton.Store) {
	mustCreate(t, s, 1, "alpha")
	mustCreate(t, s, 2, "beta")
	if err := s.QueueDelete(t.Context(), Region, Account, "alpha", at(time.Second)); err != nil {
		t.Fatalf("delete alpha: %v", err)
	}
	_, err := s.QueueGet(t.Context(), Region, Account, "alpha")
	checkErr(t, "get deleted alpha", err, baton.ErrNotFound)
	qs, err := s.QueueList(t.Context(), baton.QueueListParams{Region: Region, Account: Account})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(qs) != 1 || qs[0].Name != "beta" {
		names := make([]string, len(qs))
		for i, q := range qs {
			names[i] = q.Name
		}
		t.Errorf("list after deleting alpha: got %v, want [beta]", names)
	}
	checkErr(t, "delete alpha twice", s.QueueDelete(t.Context(), Region, Account, "alpha", at(2*time.Second)), baton.ErrNotFound)
}

func testQueueDeleteRemovesMessages(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	delayed := NewMessage(3, base)
	delayed.VisibleAt = at(time.Minute)
	MustSend(t, s, q.ID, NewMessage(1, base))
	inFlight := mustReceiveOne(t, s, q.ID, base, at(lease), MessageID(1))
	MustSend(t, s, q.ID, NewMessage(2, base), delayed)
	if err := s.QueueDelete(t.Context(), Region, Account, "orders", at(time.Second)); err != nil {
		t.Fatalf("delete orders: %v", err)
	}

	// The old id names nothing any more.
	ctx := t.Context()
	_, err := s.MessageStats(ctx, baton.MessageStatsParams{QueueID: q.ID, Now: at(time.Second)})
	checkErr(t, "stats of the deleted queue", err, baton.ErrNotFound)
	_, err = s.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: q.ID, Now: at(time.Hour), Max: 10, VisibleAt: at(time.Hour + lease)})
	checkErr(t, "receive from the deleted queue", err, baton.ErrNotFound)
	_, err = s.MessageDelete(ctx, baton.MessageDeleteParams{QueueID: q.ID, MessageID: inFlight.ID, Epoch: inFlight.Epoch, Now: at(time.Second)})
	checkErr(t, "delete a message of the deleted queue", err, baton.ErrNotFound)

	// A queue re-created under the name starts empty.
	again := NewQueue(QueueID(2), "orders")
	again.CreatedAt = at(2 * time.Minute)
	if err := s.QueueCreate(ctx, baton.QueueCreateParams{Queue: again, DeletedCutoff: at(time.Second)}); err != nil {
		t.Fatalf("re-create orders: %v", err)
	}
	checkStats(t, "stats of the re-created queue", MustStats(t, s, again.ID, at(time.Hour)), baton.MessageStats{})
	checkIDs(t, "receive from the re-created queue", mustReceive(t, s, again.ID, at(time.Hour), at(time.Hour+lease), 10))
}

func testQueueDeleteNotFound(t *testing.T, s baton.Store) {
	checkErr(t, "delete in an empty store", s.QueueDelete(t.Context(), Region, Account, "orders", base), baton.ErrNotFound)
	mustCreate(t, s, 1, "orders")
	checkErr(t, "delete another account's orders", s.QueueDelete(t.Context(), Region, OtherAccount, "orders", base), baton.ErrNotFound)
	checkErr(t, "delete a prefix of a name", s.QueueDelete(t.Context(), Region, Account, "order", base), baton.ErrNotFound)
	MustGetQueue(t, s, Account, "orders")
}

// ---------------------------------------------------------------------------
// QueuePurge

func testQueuePurgeRemovesMessages(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	other := mustCreate(t, s, 2, "other")
	MustSend(t, s, other.ID, NewMessage(100, base))

	MustSend(t, s, q.ID, NewMessage(1, base))
	inFlight := mustReceiveOne(t, s, q.ID, base, at(lease), MessageID(1))
	delayed := NewMessage(3, base)
	delayed.VisibleAt = at(100 * time.Second)
	MustSend(t, s, q.ID, NewMessage(2, base), delayed)
	checkStats(t, "stats before purge", MustStats(t, s, q.ID, at(time.Second)),
		baton.MessageStats{Visible: 1, InFlight: 1, Delayed: 1, NextVisibleAt: at(lease)})

	now := at(2 * time.Second)
	if err := s.QueuePurge(t.Context(), baton.QueuePurgeParams{Region: Region, Account: Account, Name: "orders", Now: now, PurgedCutoff: now.Add(-time.Minute)}); err != nil {
		t.Fatalf("purge: %v", err)
	}
	checkStats(t, "stats right after purge", MustStats(t, s, q.ID, now), baton.MessageStats{})
	checkStats(t, "stats long after purge", MustStats(t, s, q.ID, at(time.Hour)), baton.MessageStats{})
	checkIDs(t, "receive long after purge", mustReceive(t, s, q.ID, at(time.Hour), at(time.Hour+lease), 10))
	checkResult(t, "delete the purged in-flight message",
		MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: inFlight.ID, Epoch: inFlight.Epoch, Now: at(3 * time.Second)}),
		baton.LeaseGone)

	want := cloneQueue(q)
	want.PurgedAt = now
	checkQueue(t, "get after purge", MustGetQueue(t, s, Account, "orders"), want)
	checkStats(t, "stats of another queue", MustStats(t, s, other.ID, now), baton.MessageStats{Visible: 1})

	// The queue still takes messages.
	MustSend(t, s, q.ID, NewMessage(4, at(time.Hour)))
	mustReceiveOne(t, s, q.ID, at(time.Hour), at(time.Hour+lease), MessageID(4))
}

func testQueuePurgePurgedRecently(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	purge := func(now time.Time) error {
		return s.QueuePurge(t.Context(), baton.QueuePurgeParams{Region: Region, Account: Account, Name: "orders", Now: now, PurgedCutoff: now.Add(-time.Minute)})
	}
	if err := purge(at(10 * time.Second)); err != nil {
		t.Fatalf("first purge: %v", err)
	}
	MustSend(t, s, q.ID, NewMessage(1, at(20*time.Second)))

	checkErr(t, "purge 30s after a purge", purge(at(40*time.Second)), baton.ErrPurgedRecently)
	checkStats(t, "stats after the refused purge", MustStats(t, s, q.ID, at(40*time.Second)), baton.MessageStats{Visible: 1})
	want := cloneQueue(q)
	want.PurgedAt = at(10 * time.Second)
	checkQueue(t, "get after the refused purge", MustGetQueue(t, s, Account, "orders"), want)

	checkErr(t, "purge 1ms before the last purge reaches the cutoff", purge(at(70*time.Second-time.Millisecond)), baton.ErrPurgedRecently)

	// Purged exactly at the cutoff is not purged after it.
	if err := purge(at(70 * time.Second)); err != nil {
		t.Fatalf("purge with the last purge at the cutoff: got error %v, want nil", err)
	}
	checkStats(t, "stats after the second purge", MustStats(t, s, q.ID, at(70*time.Second)), baton.MessageStats{})
	want.PurgedAt = at(70 * time.Second)
	checkQueue(t, "get after the second purge", MustGetQueue(t, s, Account, "orders"), want)
}

func testQueuePurgeNotFound(t *testing.T, s baton.Store) {
	err := s.QueuePurge(t.Context(), baton.QueuePurgeParams{Region: Region, Account: Account, Name: "orders", Now: base, PurgedCutoff: at(-time.Minute)})
	checkErr(t, "purge in an empty store", err, baton.ErrNotFound)
	mustCreate(t, s, 1, "orders")
	err = s.QueuePurge(t.Context(), baton.QueuePurgeParams{Region: Region, Account: OtherAccount, Name: "orders", Now: base, PurgedCutoff: at(-time.Minute)})
	checkErr(t, "purge another account's orders", err, baton.ErrNotFound)
}

// ---------------------------------------------------------------------------
// MessageSend

func testMessageSendRoundTrip(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	sentAt := at(1234 * time.Millisecond)
	full := fullMessage(1, sentAt)
	plain := &baton.Message{ID: MessageID(2), Body: "x", SentAt: sentAt, VisibleAt: sentAt}
	big := NewMessage(3, sentAt)
	big.Body = strings.Repeat("0123456789abcdef", baton.MaxMessageSize/16)
	sent := []*baton.Message{full, plain, big}
	MustSend(t, s, q.ID, cloneMessage(full), cloneMessage(plain), cloneMessage(big))

	now := at(2 * time.Second)
	msgs := mustReceive(t, s, q.ID, now, now.Add(lease), 10)
	checkIDs(t, "receive", msgs, full.ID, plain.ID, big.ID)
	byID := make(map[string]*baton.Message)
	for _, m := range msgs {
		byID[m.ID] = m
	}
	for _, m := range sent {
		if got := byID[m.ID]; got != nil {
			checkMessage(t, "received "+m.ID, got, leased(m, 1, 1, now, now, now.Add(lease)))
		}
	}
}

func testMessageSendKeepsNoReference(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	m := fullMessage(1, base)
	want := cloneMessage(m)
	MustSend(t, s, q.ID, m)
	m.Body = "changed"
	m.Attributes["Str"] = baton.MessageAttribute{DataType: "String", StringValue: "changed"}
	m.Attributes["Added"] = baton.MessageAttribute{DataType: "String", StringValue: "added"}
	m.Attributes["Bin"].BinaryValue[0] = 0xaa
	m.VisibleAt = at(time.Hour)
	got := mustReceiveOne(t, s, q.ID, base, at(lease), m.ID)
	checkMessage(t, "received after changing the sent value", got, leased(want, 1, 1, base, base, at(lease)))
}

func testMessageSendUnknownQueue(t *testing.T, s baton.Store) {
	_, err := s.MessageSend(t.Context(), baton.MessageSendParams{QueueID: QueueID(1), Messages: []*baton.Message{NewMessage(1, base)}})
	checkErr(t, "send to an unknown queue", err, baton.ErrNotFound)
}

// ---------------------------------------------------------------------------
// MessageReceive

func testMessageReceiveOnlyVisible(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	delayed := NewMessage(2, base)
	delayed.VisibleAt = at(10 * time.Second)
	MustSend(t, s, q.ID, NewMessage(1, base), delayed)

	checkIDs(t, "receive at send time", mustReceive(t, s, q.ID, base, at(lease), 10), MessageID(1))
	checkIDs(t, "receive 1ms before the delay ends", mustReceive(t, s, q.ID, at(10*time.Second-time.Millisecond), at(10*time.Second+lease), 10))
	checkIDs(t, "receive when the delay ends", mustReceive(t, s, q.ID, at(10*time.Second), at(10*time.Second+lease), 10), MessageID(2))
	checkIDs(t, "receive with everything in flight", mustReceive(t, s, q.ID, at(11*time.Second), at(11*time.Second+lease), 10))
}

func testMessageReceiveMax(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	var want []string
	for i := 1; i <= 5; i++ {
		MustSend(t, s, q.ID, NewMessage(i, base))
		want = append(want, MessageID(i))
	}
	now := at(time.Second)
	var got []*baton.Message
	for i, n := range []int{2, 2, 1, 0} {
		msgs := mustReceive(t, s, q.ID, now, now.Add(lease), 2)
		if len(msgs) != n {
			t.Errorf("receive %d with Max 2: got %d messages, want %d", i+1, len(msgs), n)
		}
		got = append(got, msgs...)
	}
	checkIDs(t, "all receives together", got, want...)

	// Max 1 takes one of two visible messages and leaves the other.
	MustSend(t, s, q.ID, NewMessage(6, now), NewMessage(7, now))
	first := mustReceive(t, s, q.ID, now, now.Add(lease), 1)
	rest := mustReceive(t, s, q.ID, now, now.Add(lease), 10)
	if len(first) != 1 || len(rest) != 1 {
		t.Fatalf("receive Max 1, then the rest: got %v and %v, want one message each", ids(first), ids(rest))
	}
	checkIDs(t, "receive Max 1, then the rest", append(first, rest...), MessageID(6), MessageID(7))
}

// A standard queue hands out visible messages oldest sent first, within a
// receive and from one receive to the next.
func testMessageReceiveSendOrder(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	for i := 1; i <= 5; i++ {
		MustSend(t, s, q.ID, NewMessage(i, at(time.Duration(i)*time.Millisecond)))
	}
	now := at(time.Second)
	checkOrder(t, "receive Max 2", mustReceive(t, s, q.ID, now, now.Add(lease), 2), MessageID(1), MessageID(2))
	checkOrder(t, "receive the rest", mustReceive(t, s, q.ID, now, now.Add(lease), 10), MessageID(3), MessageID(4), MessageID(5))
}

// A message whose lease lapsed, or was released, comes back before the
// messages sent after it, as on SQS: by first send, not by the moment it
// became visible again.
func testMessageReceiveLapsedBeforeLaterSends(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	MustSend(t, s, q.ID, NewMessage(1, base))
	mustReceiveOne(t, s, q.ID, base, at(10*time.Second), MessageID(1))
	MustSend(t, s, q.ID, NewMessage(2, at(5*time.Second)), NewMessage(3, at(6*time.Second)))
	MustSend(t, s, q.ID, NewMessage(4, at(7*time.Second)))

	now := at(11 * time.Second) // message 1's lease lapsed at 10 s
	checkOrder(t, "receive Max 1 after the lapse", mustReceive(t, s, q.ID, now, now.Add(lease), 1), MessageID(1))
	checkOrder(t, "receive Max 1 next", mustReceive(t, s, q.ID, now, now.Add(lease), 1), MessageID(2))
	checkResult(t, "release message 2",
		MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: MessageID(2), Epoch: 1, Now: at(12 * time.Second), VisibleAt: at(12 * time.Second)}),
		baton.LeaseCurrent)
	MustSend(t, s, q.ID, NewMessage(5, at(13*time.Second)))
	now = at(14 * time.Second)
	checkOrder(t, "receive after the release", mustReceive(t, s, q.ID, now, now.Add(lease), 10),
		MessageID(2), MessageID(3), MessageID(4), MessageID(5))

	// Lapsing together with messages sent later, it still comes first.
	now = now.Add(lease)
	checkOrder(t, "receive when all five leases lapsed", mustReceive(t, s, q.ID, now, now.Add(lease), 10),
		MessageID(1), MessageID(2), MessageID(3), MessageID(4), MessageID(5))
}

func testMessageReceiveLease(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	m := fullMessage(1, base)
	MustSend(t, s, q.ID, cloneMessage(m))

	got := mustReceiveOne(t, s, q.ID, base, at(lease), m.ID)
	checkMessage(t, "first receive", got, leased(m, 1, 1, base, base, at(lease)))
	checkIDs(t, "receive 1ms before the lease ends", mustReceive(t, s, q.ID, at(lease-time.Millisecond), at(2*lease), 10))

	got = mustReceiveOne(t, s, q.ID, at(lease), at(2*lease), m.ID)
	checkMessage(t, "second receive", got, leased(m, 2, 2, base, at(lease), at(2*lease)))

	// A lease of any length, not only the queue's timeout.
	got = mustReceiveOne(t, s, q.ID, at(3*lease), at(3*lease+12*time.Hour), m.ID)
	checkMessage(t, "third receive", got, leased(m, 3, 3, base, at(3*lease), at(3*lease+12*time.Hour)))
	checkIDs(t, "receive during the long lease", mustReceive(t, s, q.ID, at(3*lease+12*time.Hour-time.Millisecond), at(4*lease+12*time.Hour), 10))
}

func testMessageReceiveVisibilityZero(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	m := NewMessage(1, base)
	MustSend(t, s, q.ID, cloneMessage(m))
	now := at(time.Second)

	got := mustReceiveOne(t, s, q.ID, now, now, m.ID)
	checkMessage(t, "receive with VisibleAt = Now", got, leased(m, 1, 1, now, now, now))
	checkStats(t, "stats after a zero-timeout receive", MustStats(t, s, q.ID, now), baton.MessageStats{Visible: 1})

	got = mustReceiveOne(t, s, q.ID, now, now, m.ID)
	checkMessage(t, "receive again at the same instant", got, leased(m, 2, 2, now, now, now))

	// Its lease ended as it began: deleting by it finds the lease lapsed.
	out := MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: m.ID, Epoch: 2, Now: now, RequireLive: true})
	checkResult(t, "require-live delete by a zero-timeout lease", out, baton.LeaseLapsed)

	got = mustReceiveOne(t, s, q.ID, now, now.Add(lease), m.ID)
	checkMessage(t, "receive with a lease", got, leased(m, 3, 3, now, now, now.Add(lease)))
	checkStats(t, "stats after the leasing receive", MustStats(t, s, q.ID, now),
		baton.MessageStats{InFlight: 1, NextVisibleAt: now.Add(lease)})
}

func testMessageReceiveDelayed(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	m := NewMessage(1, base)
	m.VisibleAt = at(5 * time.Second)
	MustSend(t, s, q.ID, cloneMessage(m))

	checkStats(t, "stats while delayed", MustStats(t, s, q.ID, base),
		baton.MessageStats{Delayed: 1, NextVisibleAt: at(5 * time.Second)})
	checkIDs(t, "receive 1ms before the delay ends", mustReceive(t, s, q.ID, at(5*time.Second-time.Millisecond), at(5*time.Second+lease), 10))
	checkStats(t, "stats when the delay ends", MustStats(t, s, q.ID, at(5*time.Second)), baton.MessageStats{Visible: 1})

	now := at(6 * time.Second)
	got := mustReceiveOne(t, s, q.ID, now, now.Add(lease), m.ID)
	checkMessage(t, "receive after the delay", got, leased(m, 1, 1, now, now, now.Add(lease)))
}

func testMessageReceiveRetention(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	MustSend(t, s, q.ID,
		NewMessage(1, base),
		NewMessage(2, at(1*time.Second)),
		NewMessage(3, at(10*time.Second)), // sent at the cutoff: kept
		NewMessage(4, at(20*time.Second)),
	)
	now := at(30 * time.Second)
	cutoff := at(10 * time.Second)
	msgs := MustReceive(t, s, baton.MessageReceiveParams{QueueID: q.ID, Now: now, Max: 10, VisibleAt: now.Add(lease), RetentionCutoff: cutoff})
	checkIDs(t, "receive with a retention cutoff", msgs, MessageID(3), MessageID(4))
	checkStats(t, "stats after dropping expired messages", MustStats(t, s, q.ID, now),
		baton.MessageStats{InFlight: 2, NextVisibleAt: now.Add(lease)})

	// Dropped means gone, even for a receive that would keep them.
	later := now.Add(lease)
	msgs = MustReceive(t, s, baton.MessageReceiveParams{QueueID: q.ID, Now: later, Max: 10, VisibleAt: later.Add(lease), RetentionCutoff: at(-time.Hour)})
	checkIDs(t, "receive with no effective cutoff", msgs, MessageID(3), MessageID(4))
}

func testMessageReceiveRetentionNotCountedInMax(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	MustSend(t, s, q.ID, NewMessage(1, base), NewMessage(2, base), NewMessage(3, at(20*time.Second)))
	now := at(30 * time.Second)
	msgs := MustReceive(t, s, baton.MessageReceiveParams{QueueID: q.ID, Now: now, Max: 1, VisibleAt: now.Add(lease), RetentionCutoff: at(10 * time.Second)})
	checkIDs(t, "receive Max 1 past two expired messages", msgs, MessageID(3))
}

func testMessageReceiveReturnsCopies(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	m := fullMessage(1, base)
	MustSend(t, s, q.ID, cloneMessage(m))

	got := mustReceiveOne(t, s, q.ID, base, at(lease), m.ID)
	got.Body = "changed"
	got.Attributes["Str"] = baton.MessageAttribute{DataType: "String", StringValue: "changed"}
	got.Attributes["Added"] = baton.MessageAttribute{DataType: "String", StringValue: "added"}
	got.Attributes["Bin"].BinaryValue[0] = 0xaa
	got.Epoch = 42
	got.ReceiveCount = 42
	got.VisibleAt = base

	checkIDs(t, "receive after changing the received copy", mustReceive(t, s, q.ID, at(time.Second), at(time.Second+lease), 10))
	got = mustReceiveOne(t, s, q.ID, at(lease), at(2*lease), m.ID)
	checkMessage(t, "receive after the lease", got, leased(m, 2, 2, base, at(lease), at(2*lease)))
}

func testMessageReceiveQueuesAreSeparate(t *testing.T, s baton.Store) {
	q1 := mustCreate(t, s, 1, "one")
	q2 := mustCreate(t, s, 2, "two")
	MustSend(t, s, q1.ID, NewMessage(1, base))
	checkIDs(t, "receive from the other queue", mustReceive(t, s, q2.ID, base, at(lease), 10))
	checkStats(t, "stats of the other queue", MustStats(t, s, q2.ID, base), baton.MessageStats{})
	checkIDs(t, "receive from the queue sent to", mustReceive(t, s, q1.ID, base, at(lease), 10), MessageID(1))
}

func testMessageReceiveUnknownQueue(t *testing.T, s baton.Store) {
	_, err := s.MessageReceive(t.Context(), baton.MessageReceiveParams{QueueID: QueueID(1), Now: base, Max: 10, VisibleAt: at(lease)})
	checkErr(t, "receive from an unknown queue", err, baton.ErrNotFound)
}

// ---------------------------------------------------------------------------
// MessageDelete

func testMessageDeleteCurrent(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	m := fullMessage(1, base)
	MustSend(t, s, q.ID, cloneMessage(m))
	mustReceiveOne(t, s, q.ID, base, at(lease), m.ID)

	out := MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: m.ID, Epoch: 1, Now: at(time.Second)})
	checkResult(t, "delete by the live lease", out, baton.LeaseCurrent)
	if out.Message != nil {
		checkMessage(t, "state before the delete", out.Message, leased(m, 1, 1, base, base, at(lease)))
	}
	checkStats(t, "stats after the delete", MustStats(t, s, q.ID, at(time.Second)), baton.MessageStats{})
	checkStats(t, "stats after the lease would have ended", MustStats(t, s, q.ID, at(time.Hour)), baton.MessageStats{})
	checkIDs(t, "receive after the lease would have ended", mustReceive(t, s, q.ID, at(time.Hour), at(time.Hour+lease), 10))

	out = MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: m.ID, Epoch: 1, Now: at(2 * time.Second)})
	checkResult(t, "delete again", out, baton.LeaseGone)
}

func testMessageDeleteCurrentLastMillisecond(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	MustSend(t, s, q.ID, NewMessage(1, base))
	mustReceiveOne(t, s, q.ID, base, at(lease), MessageID(1))
	out := MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: MessageID(1), Epoch: 1, Now: at(lease - time.Millisecond), RequireLive: true})
	checkResult(t, "require-live delete 1ms before the lease ends", out, baton.LeaseCurrent)
	checkStats(t, "stats after the delete", MustStats(t, s, q.ID, at(lease)), baton.MessageStats{})
}

func testMessageDeleteSupersededEpoch(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	m := NewMessage(1, base)
	MustSend(t, s, q.ID, cloneMessage(m))
	mustReceiveOne(t, s, q.ID, base, at(10*time.Second), m.ID)
	mustReceiveOne(t, s, q.ID, at(10*time.Second), at(40*time.Second), m.ID)

	out := MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: m.ID, Epoch: 1, Now: at(11 * time.Second)})
	checkResult(t, "delete by the first lease", out, baton.LeaseLapsed)
	if out.Message != nil {
		checkMessage(t, "state before the delete", out.Message, leased(m, 2, 2, base, at(10*time.Second), at(40*time.Second)))
	}
	checkStats(t, "stats after the lapsed delete", MustStats(t, s, q.ID, at(11*time.Second)), baton.MessageStats{})
	checkResult(t, "delete by the second lease",
		MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: m.ID, Epoch: 2, Now: at(12 * time.Second)}),
		baton.LeaseGone)
}

func testMessageDeleteSupersededEpochRequireLive(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	m := NewMessage(1, base)
	MustSend(t, s, q.ID, cloneMessage(m))
	mustReceiveOne(t, s, q.ID, base, at(10*time.Second), m.ID)
	mustReceiveOne(t, s, q.ID, at(10*time.Second), at(40*time.Second), m.ID)

	out := MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: m.ID, Epoch: 1, Now: at(11 * time.Second), RequireLive: true})
	checkResult(t, "require-live delete by the first lease", out, baton.LeaseLapsed)
	if out.Message != nil {
		checkMessage(t, "state before the delete", out.Message, leased(m, 2, 2, base, at(10*time.Second), at(40*time.Second)))
	}
	checkStats(t, "stats after the refused delete", MustStats(t, s, q.ID, at(11*time.Second)),
		baton.MessageStats{InFlight: 1, NextVisibleAt: at(40 * time.Second)})
	checkResult(t, "require-live delete by the second lease",
		MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: m.ID, Epoch: 2, Now: at(12 * time.Second), RequireLive: true}),
		baton.LeaseCurrent)
}

func testMessageDeleteExpiredLease(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	m := NewMessage(1, base)
	MustSend(t, s, q.ID, cloneMessage(m))
	mustReceiveOne(t, s, q.ID, base, at(10*time.Second), m.ID)

	// The lease ends at its VisibleAt: the message is visible again then.
	out := MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: m.ID, Epoch: 1, Now: at(10 * time.Second)})
	checkResult(t, "delete when the lease ends", out, baton.LeaseLapsed)
	if out.Message != nil {
		checkMessage(t, "state before the delete", out.Message, leased(m, 1, 1, base, base, at(10*time.Second)))
	}
	checkStats(t, "stats after the lapsed delete", MustStats(t, s, q.ID, at(10*time.Second)), baton.MessageStats{})
	checkIDs(t, "receive after the lapsed delete", mustReceive(t, s, q.ID, at(10*time.Second), at(10*time.Second+lease), 10))
}

func testMessageDeleteExpiredLeaseRequireLive(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	m := NewMessage(1, base)
	MustSend(t, s, q.ID, cloneMessage(m))
	mustReceiveOne(t, s, q.ID, base, at(10*time.Second), m.ID)

	out := MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: m.ID, Epoch: 1, Now: at(10 * time.Second), RequireLive: true})
	checkResult(t, "require-live delete when the lease ends", out, baton.LeaseLapsed)
	checkStats(t, "stats after the refused delete", MustStats(t, s, q.ID, at(10*time.Second)), baton.MessageStats{Visible: 1})
	got := mustReceiveOne(t, s, q.ID, at(20*time.Second), at(20*time.Second+lease), m.ID)
	checkMessage(t, "receive after the refused delete", got, leased(m, 2, 2, base, at(20*time.Second), at(20*time.Second+lease)))
}

func testMessageDeleteGone(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	checkResult(t, "delete a message never sent",
		MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: MessageID(1), Epoch: 1, Now: base}),
		baton.LeaseGone)
	checkResult(t, "require-live delete a message never sent",
		MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: MessageID(1), Epoch: 1, Now: base, RequireLive: true}),
		baton.LeaseGone)

	// A message of another queue is not this queue's.
	other := mustCreate(t, s, 2, "other")
	MustSend(t, s, other.ID, NewMessage(2, base))
	mustReceiveOne(t, s, other.ID, base, at(lease), MessageID(2))
	checkResult(t, "delete another queue's message",
		MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: MessageID(2), Epoch: 1, Now: base}),
		baton.LeaseGone)
	checkStats(t, "stats of the other queue", MustStats(t, s, other.ID, base), baton.MessageStats{InFlight: 1, NextVisibleAt: at(lease)})
}

func testMessageDeleteUnknownQueue(t *testing.T, s baton.Store) {
	_, err := s.MessageDelete(t.Context(), baton.MessageDeleteParams{QueueID: QueueID(1), MessageID: MessageID(1), Epoch: 1, Now: base})
	checkErr(t, "delete in an unknown queue", err, baton.ErrNotFound)
}

// ---------------------------------------------------------------------------
// MessageChangeVisibility

func testMessageChangeVisibilityExtend(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	m := NewMessage(1, base)
	MustSend(t, s, q.ID, cloneMessage(m))
	mustReceiveOne(t, s, q.ID, base, at(10*time.Second), m.ID)

	out := MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: m.ID, Epoch: 1, Now: at(5 * time.Second), VisibleAt: at(time.Minute)})
	checkResult(t, "extend the live lease", out, baton.LeaseCurrent)
	if out.Message != nil {
		checkMessage(t, "state before the change", out.Message, leased(m, 1, 1, base, base, at(10*time.Second)))
	}
	checkStats(t, "stats when the old lease would have ended", MustStats(t, s, q.ID, at(10*time.Second)),
		baton.MessageStats{InFlight: 1, NextVisibleAt: at(time.Minute)})
	checkIDs(t, "receive 1ms before the new end", mustReceive(t, s, q.ID, at(time.Minute-time.Millisecond), at(2*time.Minute), 10))
	got := mustReceiveOne(t, s, q.ID, at(time.Minute), at(2*time.Minute), m.ID)
	checkMessage(t, "receive at the new end", got, leased(m, 2, 2, base, at(time.Minute), at(2*time.Minute)))
}

func testMessageChangeVisibilityExtendKeepsLease(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	MustSend(t, s, q.ID, NewMessage(1, base))
	mustReceiveOne(t, s, q.ID, base, at(10*time.Second), MessageID(1))
	checkResult(t, "extend the lease",
		MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: MessageID(1), Epoch: 1, Now: at(5 * time.Second), VisibleAt: at(time.Minute)}),
		baton.LeaseCurrent)
	checkResult(t, "extend the same lease again after its first end",
		MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: MessageID(1), Epoch: 1, Now: at(20 * time.Second), VisibleAt: at(2 * time.Minute)}),
		baton.LeaseCurrent)
	checkResult(t, "require-live delete by the extended lease",
		MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: MessageID(1), Epoch: 1, Now: at(90 * time.Second), RequireLive: true}),
		baton.LeaseCurrent)
	checkStats(t, "stats after the delete", MustStats(t, s, q.ID, at(90*time.Second)), baton.MessageStats{})
}

func testMessageChangeVisibilityShorten(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	MustSend(t, s, q.ID, NewMessage(1, base))
	mustReceiveOne(t, s, q.ID, base, at(lease), MessageID(1))
	checkResult(t, "shorten the live lease",
		MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: MessageID(1), Epoch: 1, Now: at(5 * time.Second), VisibleAt: at(6 * time.Second)}),
		baton.LeaseCurrent)
	checkStats(t, "stats after shortening", MustStats(t, s, q.ID, at(5*time.Second)),
		baton.MessageStats{InFlight: 1, NextVisibleAt: at(6 * time.Second)})
	checkIDs(t, "receive 1ms before the new end", mustReceive(t, s, q.ID, at(6*time.Second-time.Millisecond), at(6*time.Second+lease), 10))
	got := mustReceiveOne(t, s, q.ID, at(6*time.Second), at(6*time.Second+lease), MessageID(1))
	if got.Epoch != 2 {
		t.Errorf("receive at the new end: Epoch = %d, want 2", got.Epoch)
	}
}

func testMessageChangeVisibilityRelease(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	m := NewMessage(1, base)
	MustSend(t, s, q.ID, cloneMessage(m))
	mustReceiveOne(t, s, q.ID, base, at(lease), m.ID)

	now := at(5 * time.Second)
	out := MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: m.ID, Epoch: 1, Now: now, VisibleAt: now})
	checkResult(t, "release the live lease", out, baton.LeaseCurrent)
	if out.Message != nil {
		checkMessage(t, "state before the release", out.Message, leased(m, 1, 1, base, base, at(lease)))
	}
	checkStats(t, "stats after the release", MustStats(t, s, q.ID, now), baton.MessageStats{Visible: 1})
	checkResult(t, "change visibility by the released lease",
		MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: m.ID, Epoch: 1, Now: now, VisibleAt: at(time.Hour)}),
		baton.LeaseLapsed)
	got := mustReceiveOne(t, s, q.ID, now, now.Add(lease), m.ID)
	checkMessage(t, "receive at the instant of release", got, leased(m, 2, 2, base, now, now.Add(lease)))
}

func testMessageChangeVisibilitySupersededEpoch(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	m := NewMessage(1, base)
	MustSend(t, s, q.ID, cloneMessage(m))
	mustReceiveOne(t, s, q.ID, base, at(10*time.Second), m.ID)
	mustReceiveOne(t, s, q.ID, at(10*time.Second), at(40*time.Second), m.ID)

	now := at(11 * time.Second)
	out := MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: m.ID, Epoch: 1, Now: now, VisibleAt: now})
	checkResult(t, "release by the first lease", out, baton.LeaseLapsed)
	if out.Message != nil {
		checkMessage(t, "state before the change", out.Message, leased(m, 2, 2, base, at(10*time.Second), at(40*time.Second)))
	}
	checkStats(t, "stats after the lapsed change", MustStats(t, s, q.ID, now),
		baton.MessageStats{InFlight: 1, NextVisibleAt: at(40 * time.Second)})
	checkIDs(t, "receive after the lapsed change", mustReceive(t, s, q.ID, now, now.Add(lease), 10))

	out = MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: m.ID, Epoch: 1, Now: now, VisibleAt: at(time.Hour)})
	checkResult(t, "extend by the first lease", out, baton.LeaseLapsed)
	got := mustReceiveOne(t, s, q.ID, at(40*time.Second), at(40*time.Second+lease), m.ID)
	checkMessage(t, "receive when the second lease ends", got, leased(m, 3, 3, base, at(40*time.Second), at(40*time.Second+lease)))
}

// With AnyLease the receipt of an earlier lease changes the lease of a
// later receive while that one is live, as an older receipt handle does on
// an SQS standard queue: an extension holds the message, a release frees
// it.
func testMessageChangeVisibilityAnyLeaseSuperseded(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	m := NewMessage(1, base)
	MustSend(t, s, q.ID, cloneMessage(m))
	mustReceiveOne(t, s, q.ID, base, at(10*time.Second), m.ID)
	mustReceiveOne(t, s, q.ID, at(10*time.Second), at(40*time.Second), m.ID)

	now := at(11 * time.Second)
	out := MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: m.ID, Epoch: 1, Now: now, VisibleAt: at(time.Minute), AnyLease: true})
	checkResult(t, "extend by the first lease", out, baton.LeaseSuperseded)
	if out.Message != nil {
		checkMessage(t, "state before the change", out.Message, leased(m, 2, 2, base, at(10*time.Second), at(40*time.Second)))
	}
	checkStats(t, "stats when the second lease would have ended", MustStats(t, s, q.ID, at(40*time.Second)),
		baton.MessageStats{InFlight: 1, NextVisibleAt: at(time.Minute)})
	checkIDs(t, "receive before the new end", mustReceive(t, s, q.ID, at(40*time.Second), at(time.Hour), 10))
	checkResult(t, "delete by the second lease, still its holder's",
		MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: m.ID, Epoch: 2, Now: at(50 * time.Second), RequireLive: true}),
		baton.LeaseCurrent)

	MustSend(t, s, q.ID, NewMessage(2, base))
	mustReceiveOne(t, s, q.ID, base, at(10*time.Second), MessageID(2))
	mustReceiveOne(t, s, q.ID, at(10*time.Second), at(40*time.Second), MessageID(2))
	checkResult(t, "release by the first lease",
		MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: MessageID(2), Epoch: 1, Now: now, VisibleAt: now, AnyLease: true}),
		baton.LeaseSuperseded)
	checkStats(t, "stats after the release", MustStats(t, s, q.ID, now), baton.MessageStats{Visible: 1})
	got := mustReceiveOne(t, s, q.ID, now, now.Add(lease), MessageID(2))
	if got.Epoch != 3 || got.ReceiveCount != 3 {
		t.Errorf("receive after the release: Epoch %d, ReceiveCount %d, want 3 and 3", got.Epoch, got.ReceiveCount)
	}
}

// AnyLease changes only a live lease: a message visible again after its
// leases lapsed, or released, stays as it is.
func testMessageChangeVisibilityAnyLeaseNotInFlight(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	m := NewMessage(1, base)
	MustSend(t, s, q.ID, cloneMessage(m))
	mustReceiveOne(t, s, q.ID, base, at(10*time.Second), m.ID)

	out := MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: m.ID, Epoch: 1, Now: at(10 * time.Second), VisibleAt: at(time.Hour), AnyLease: true})
	checkResult(t, "extend by the lapsed lease", out, baton.LeaseLapsed)
	checkStats(t, "stats after the lapsed change", MustStats(t, s, q.ID, at(10*time.Second)), baton.MessageStats{Visible: 1})

	mustReceiveOne(t, s, q.ID, at(10*time.Second), at(40*time.Second), m.ID)
	checkResult(t, "extend by the first lease once the second lapsed",
		MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: m.ID, Epoch: 1, Now: at(40 * time.Second), VisibleAt: at(time.Hour), AnyLease: true}),
		baton.LeaseLapsed)
	mustReceiveOne(t, s, q.ID, at(40*time.Second), at(70*time.Second), m.ID)
	checkResult(t, "release by the third lease",
		MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: m.ID, Epoch: 3, Now: at(41 * time.Second), VisibleAt: at(41 * time.Second)}),
		baton.LeaseCurrent)
	checkResult(t, "extend by the first lease once the third was released",
		MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: m.ID, Epoch: 1, Now: at(42 * time.Second), VisibleAt: at(time.Hour), AnyLease: true}),
		baton.LeaseLapsed)
	checkStats(t, "stats after the lapsed changes", MustStats(t, s, q.ID, at(42*time.Second)), baton.MessageStats{Visible: 1})
	got := mustReceiveOne(t, s, q.ID, at(42*time.Second), at(time.Minute+42*time.Second), m.ID)
	if got.Epoch != 4 {
		t.Errorf("receive after the lapsed changes: Epoch %d, want 4", got.Epoch)
	}
}

func testMessageChangeVisibilityExpiredLease(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	m := NewMessage(1, base)
	MustSend(t, s, q.ID, cloneMessage(m))
	mustReceiveOne(t, s, q.ID, base, at(10*time.Second), m.ID)

	now := at(10 * time.Second)
	out := MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: m.ID, Epoch: 1, Now: now, VisibleAt: at(time.Hour)})
	checkResult(t, "extend when the lease ends", out, baton.LeaseLapsed)
	if out.Message != nil {
		checkMessage(t, "state before the change", out.Message, leased(m, 1, 1, base, base, at(10*time.Second)))
	}
	checkStats(t, "stats after the lapsed change", MustStats(t, s, q.ID, now), baton.MessageStats{Visible: 1})
	got := mustReceiveOne(t, s, q.ID, now, now.Add(lease), m.ID)
	checkMessage(t, "receive after the lapsed change", got, leased(m, 2, 2, base, now, now.Add(lease)))
}

// Concurrent calls reach a store in any order of their times: a change
// whose clock read came before the lease's end may arrive after a read
// (stats, a receive) made after it, which found the message visible again.
// The change is judged at its own Now, where the lease is live.
func testMessageChangeVisibilityAfterLaterRead(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	MustSend(t, s, q.ID, NewMessage(1, base))
	mustReceiveOne(t, s, q.ID, base, at(10*time.Second), MessageID(1))
	checkStats(t, "stats after the lease's end", MustStats(t, s, q.ID, at(11*time.Second)), baton.MessageStats{Visible: 1})

	checkResult(t, "extend at a time before the lease's end",
		MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: MessageID(1), Epoch: 1, Now: at(9 * time.Second), VisibleAt: at(time.Minute)}),
		baton.LeaseCurrent)
	checkStats(t, "stats after the extension", MustStats(t, s, q.ID, at(11*time.Second)),
		baton.MessageStats{InFlight: 1, NextVisibleAt: at(time.Minute)})
	checkIDs(t, "receive before the new end", mustReceive(t, s, q.ID, at(11*time.Second), at(time.Minute), 10))
	mustReceiveOne(t, s, q.ID, at(time.Minute), at(2*time.Minute), MessageID(1))
}

func testMessageChangeVisibilityGone(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	checkResult(t, "change a message never sent",
		MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: MessageID(1), Epoch: 1, Now: base, VisibleAt: at(lease)}),
		baton.LeaseGone)

	MustSend(t, s, q.ID, NewMessage(2, base))
	mustReceiveOne(t, s, q.ID, base, at(lease), MessageID(2))
	checkResult(t, "delete",
		MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: MessageID(2), Epoch: 1, Now: at(time.Second)}),
		baton.LeaseCurrent)
	checkResult(t, "change a deleted message",
		MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: MessageID(2), Epoch: 1, Now: at(time.Second), VisibleAt: at(time.Second)}),
		baton.LeaseGone)
	checkStats(t, "stats after changing a deleted message", MustStats(t, s, q.ID, at(time.Second)), baton.MessageStats{})
}

func testMessageChangeVisibilityUnknownQueue(t *testing.T, s baton.Store) {
	_, err := s.MessageChangeVisibility(t.Context(), baton.MessageChangeVisibilityParams{QueueID: QueueID(1), MessageID: MessageID(1), Epoch: 1, Now: base, VisibleAt: at(lease)})
	checkErr(t, "change visibility in an unknown queue", err, baton.ErrNotFound)
}

// ---------------------------------------------------------------------------
// MessageMove

// checkMoved compares what a move promises to keep or set: the id, body and
// attributes, the receive count the move gave, the dead-letter source and
// the send time (kept, or reset to the move's time).
func checkMoved(tb testing.TB, what string, got, want *baton.Message) {
	tb.Helper()
	var d []string
	if got.ID != want.ID {
		d = append(d, fmt.Sprintf("ID = %s, want %s", got.ID, want.ID))
	}
	if got.Body != want.Body {
		d = append(d, fmt.Sprintf("Body = %s, want %s", short(got.Body), short(want.Body)))
	}
	d = append(d, diffAttributes(got.Attributes, want.Attributes)...)
	if got.ReceiveCount != want.ReceiveCount {
		d = append(d, fmt.Sprintf("ReceiveCount = %d, want %d", got.ReceiveCount, want.ReceiveCount))
	}
	if got.DeadLetterSourceARN != want.DeadLetterSourceARN {
		d = append(d, fmt.Sprintf("DeadLetterSourceARN = %q, want %q", got.DeadLetterSourceARN, want.DeadLetterSourceARN))
	}
	if got.GroupID != want.GroupID || got.DedupID != want.DedupID {
		d = append(d, fmt.Sprintf("GroupID, DedupID = %q, %q, want %q, %q", got.GroupID, got.DedupID, want.GroupID, want.DedupID))
	}
	if !got.SentAt.Equal(want.SentAt) {
		d = append(d, fmt.Sprintf("SentAt = %v, want %v", got.SentAt, want.SentAt))
	}
	for _, s := range d {
		tb.Errorf("%s: %s", what, s)
	}
}

const sourceARN = "arn:aws:sqs:us-east-1:000000000000:orders"

func testMessageMoveUnleased(t *testing.T, s baton.Store) {
	src := mustCreate(t, s, 1, "orders")
	dst := mustCreate(t, s, 2, "dlq")
	m := fullMessage(1, base)
	m.DeadLetterSourceARN = ""
	MustSend(t, s, src.ID, cloneMessage(m))

	now := at(5 * time.Second)
	out, err := s.MessageMove(t.Context(), baton.MessageMoveParams{
		QueueID: src.ID, MessageID: m.ID, ToQueueID: dst.ID, Now: now, ReceiveCount: 3, DeadLetterSourceARN: sourceARN,
	})
	if err != nil {
		t.Fatalf("move: %v", err)
	}
	// Neither gone nor, with no epoch, lapsed: the move took effect.
	checkResult(t, "move with no epoch", out, baton.LeaseCurrent)
	if out.Message != nil {
		checkMessage(t, "state before the move", out.Message, m)
	}
	checkStats(t, "stats of the source", MustStats(t, s, src.ID, now), baton.MessageStats{})
	checkStats(t, "stats of the target", MustStats(t, s, dst.ID, now), baton.MessageStats{Visible: 1})
	checkIDs(t, "receive from the source", mustReceive(t, s, src.ID, at(time.Hour), at(time.Hour+lease), 10))

	got := mustReceiveOne(t, s, dst.ID, now, now.Add(lease), m.ID)
	want := cloneMessage(m)
	want.ReceiveCount = 4 // the move's 3, plus this receive
	want.DeadLetterSourceARN = sourceARN
	checkMoved(t, "received from the target", got, want)
	if !got.Leased || !got.VisibleAt.Equal(now.Add(lease)) || !got.LeasedAt.Equal(now) {
		t.Errorf("received from the target: Leased %v, VisibleAt %v, LeasedAt %v; want true, %v, %v",
			got.Leased, got.VisibleAt, got.LeasedAt, now.Add(lease), now)
	}
}

func testMessageMoveCurrentLease(t *testing.T, s baton.Store) {
	src := mustCreate(t, s, 1, "orders")
	dst := mustCreate(t, s, 2, "dlq")
	m := NewMessage(1, base)
	MustSend(t, s, src.ID, cloneMessage(m))
	mustReceiveOne(t, s, src.ID, base, at(lease), m.ID)

	now := at(time.Second)
	out, err := s.MessageMove(t.Context(), baton.MessageMoveParams{
		QueueID: src.ID, MessageID: m.ID, Epoch: 1, ToQueueID: dst.ID, Now: now, ReceiveCount: 1, DeadLetterSourceARN: sourceARN,
	})
	if err != nil {
		t.Fatalf("move: %v", err)
	}
	checkResult(t, "move by the live lease", out, baton.LeaseCurrent)
	if out.Message != nil {
		checkMessage(t, "state before the move", out.Message, leased(m, 1, 1, base, base, at(lease)))
	}
	checkStats(t, "stats of the source", MustStats(t, s, src.ID, now), baton.MessageStats{})
	checkStats(t, "stats of the target", MustStats(t, s, dst.ID, now), baton.MessageStats{Visible: 1})
	checkResult(t, "delete from the source by the old lease",
		MustDelete(t, s, baton.MessageDeleteParams{QueueID: src.ID, MessageID: m.ID, Epoch: 1, Now: now}),
		baton.LeaseGone)

	got := mustReceiveOne(t, s, dst.ID, now, now.Add(lease), m.ID)
	want := cloneMessage(m)
	want.ReceiveCount = 2
	want.DeadLetterSourceARN = sourceARN
	checkMoved(t, "received from the target", got, want)
}

// testMessageMoveAtLeaseEnd: a lease ends at its VisibleAt; a move by it
// at that very instant finds it lapsed and moves nothing, one a
// millisecond before moves the message.
func testMessageMoveAtLeaseEnd(t *testing.T, s baton.Store) {
	src := mustCreate(t, s, 1, "orders")
	dst := mustCreate(t, s, 2, "dlq")
	m := NewMessage(1, base)
	MustSend(t, s, src.ID, cloneMessage(m))
	mustReceiveOne(t, s, src.ID, base, at(lease), m.ID)

	move := func(now time.Time) baton.LeaseOutcome {
		t.Helper()
		out, err := s.MessageMove(t.Context(), baton.MessageMoveParams{
			QueueID: src.ID, MessageID: m.ID, Epoch: 1, ToQueueID: dst.ID, Now: now, ReceiveCount: 1, DeadLetterSourceARN: sourceARN,
		})
		if err != nil {
			t.Fatalf("move at %v: %v", now, err)
		}
		return out
	}
	checkResult(t, "move at the lease's end", move(at(lease)), baton.LeaseLapsed)
	checkStats(t, "stats of the source after the lapsed move", MustStats(t, s, src.ID, at(lease)), baton.MessageStats{Visible: 1})
	checkStats(t, "stats of the target after the lapsed move", MustStats(t, s, dst.ID, at(lease)), baton.MessageStats{})
	checkResult(t, "move a millisecond before the lease's end", move(at(lease-time.Millisecond)), baton.LeaseCurrent)
	checkStats(t, "stats of the target after the move", MustStats(t, s, dst.ID, at(lease)), baton.MessageStats{Visible: 1})
}

// testMessageMoveReplaceDedupID: with ReplaceDedupID the moved message's
// deduplication id is its id; its group stays.
func testMessageMoveReplaceDedupID(t *testing.T, s baton.Store) {
	src := mustCreateFIFO(t, s, 1, "orders.fifo")
	dst := mustCreateFIFO(t, s, 2, "dlq.fifo")
	m := NewGroupMessage(1, "g", base)
	m.DedupID = "shared-key"
	MustSendFIFO(t, s, src.ID, base, cloneMessage(m))
	mustReceiveOne(t, s, src.ID, base, at(lease), m.ID)

	now := at(time.Second)
	out, err := s.MessageMove(t.Context(), baton.MessageMoveParams{
		QueueID: src.ID, MessageID: m.ID, Epoch: 1, ToQueueID: dst.ID, Now: now, ReceiveCount: 1,
		DeadLetterSourceARN: sourceARN, ReplaceDedupID: true,
	})
	if err != nil {
		t.Fatalf("move: %v", err)
	}
	checkResult(t, "move", out, baton.LeaseCurrent)
	if out.Message != nil && out.Message.DedupID != "shared-key" {
		t.Errorf("state before the move: DedupID %q, want shared-key", out.Message.DedupID)
	}
	got := mustReceiveOne(t, s, dst.ID, now, now.Add(lease), m.ID)
	want := cloneMessage(m)
	want.ReceiveCount = 2
	want.DeadLetterSourceARN = sourceARN
	want.DedupID = m.ID
	checkMoved(t, "received from the target", got, want)
}

func testMessageMoveSupersededEpoch(t *testing.T, s baton.Store) {
	src := mustCreate(t, s, 1, "orders")
	dst := mustCreate(t, s, 2, "dlq")
	m := NewMessage(1, base)
	MustSend(t, s, src.ID, cloneMessage(m))
	mustReceiveOne(t, s, src.ID, base, at(10*time.Second), m.ID)
	mustReceiveOne(t, s, src.ID, at(10*time.Second), at(40*time.Second), m.ID)

	now := at(11 * time.Second)
	out, err := s.MessageMove(t.Context(), baton.MessageMoveParams{
		QueueID: src.ID, MessageID: m.ID, Epoch: 1, ToQueueID: dst.ID, Now: now, ReceiveCount: 2, DeadLetterSourceARN: sourceARN,
	})
	if err != nil {
		t.Fatalf("move: %v", err)
	}
	checkResult(t, "move by the first lease", out, baton.LeaseLapsed)
	checkStats(t, "stats of the source", MustStats(t, s, src.ID, now),
		baton.MessageStats{InFlight: 1, NextVisibleAt: at(40 * time.Second)})
	checkStats(t, "stats of the target", MustStats(t, s, dst.ID, now), baton.MessageStats{})
	checkResult(t, "delete by the second lease",
		MustDelete(t, s, baton.MessageDeleteParams{QueueID: src.ID, MessageID: m.ID, Epoch: 2, Now: now, RequireLive: true}),
		baton.LeaseCurrent)
}

func testMessageMoveResetSentAt(t *testing.T, s baton.Store) {
	src := mustCreate(t, s, 1, "orders")
	dst := mustCreate(t, s, 2, "dlq")
	MustSend(t, s, src.ID, NewMessage(1, base), NewMessage(2, base))

	now := at(time.Hour)
	for _, p := range []baton.MessageMoveParams{
		{QueueID: src.ID, MessageID: MessageID(1), ToQueueID: dst.ID, Now: now, ResetSentAt: true},
		{QueueID: src.ID, MessageID: MessageID(2), ToQueueID: dst.ID, Now: now},
	} {
		out, err := s.MessageMove(t.Context(), p)
		if err != nil {
			t.Fatalf("move %s: %v", p.MessageID, err)
		}
		checkResult(t, "move "+p.MessageID, out, baton.LeaseCurrent)
	}
	msgs := mustReceive(t, s, dst.ID, now, now, 10)
	checkIDs(t, "receive from the target", msgs, MessageID(1), MessageID(2))
	for _, m := range msgs {
		want := NewMessage(0, base)
		want.ID, want.Body, want.ReceiveCount = m.ID, m.Body, 1
		if m.ID == MessageID(1) {
			want.SentAt = now
		}
		checkMoved(t, "received "+m.ID, m, want)
	}
	n, err := s.MessageExpire(t.Context(), dst.ID, now)
	if err != nil {
		t.Fatalf("expire: %v", err)
	}
	if n != 1 {
		t.Errorf("expire messages sent before the move: got %d, want 1 (the one whose send time was kept)", n)
	}
}

func testMessageMoveGone(t *testing.T, s baton.Store) {
	src := mustCreate(t, s, 1, "orders")
	dst := mustCreate(t, s, 2, "dlq")
	out, err := s.MessageMove(t.Context(), baton.MessageMoveParams{QueueID: src.ID, MessageID: MessageID(1), ToQueueID: dst.ID, Now: base})
	if err != nil {
		t.Fatalf("move: %v", err)
	}
	checkResult(t, "move a message never sent", out, baton.LeaseGone)
	checkStats(t, "stats of the target", MustStats(t, s, dst.ID, base), baton.MessageStats{})
}

func testMessageMoveUnknownQueue(t *testing.T, s baton.Store) {
	src := mustCreate(t, s, 1, "orders")
	MustSend(t, s, src.ID, NewMessage(1, base))
	_, err := s.MessageMove(t.Context(), baton.MessageMoveParams{QueueID: src.ID, MessageID: MessageID(1), ToQueueID: QueueID(9), Now: base})
	checkErr(t, "move to an unknown queue", err, baton.ErrNotFound)
	checkStats(t, "stats of the source after the failed move", MustStats(t, s, src.ID, base), baton.MessageStats{Visible: 1})
	_, err = s.MessageMove(t.Context(), baton.MessageMoveParams{QueueID: QueueID(9), MessageID: MessageID(1), ToQueueID: src.ID, Now: base})
	checkErr(t, "move from an unknown queue", err, baton.ErrNotFound)
}

// ---------------------------------------------------------------------------
// MessageStats

func testMessageStatsCounts(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	MustSend(t, s, q.ID, NewMessage(1, base))
	mustReceiveOne(t, s, q.ID, base, at(lease), MessageID(1))
	delayed := NewMessage(4, base)
	delayed.VisibleAt = at(100 * time.Second)
	MustSend(t, s, q.ID, NewMessage(2, base), NewMessage(3, base), delayed)

	for _, c := range []struct {
		name string
		now  time.Time
		want baton.MessageStats
	}{
		{"at send time", base, baton.MessageStats{Visible: 2, InFlight: 1, Delayed: 1, NextVisibleAt: at(lease)}},
		{"1ms before the lease ends", at(lease - time.Millisecond), baton.MessageStats{Visible: 2, InFlight: 1, Delayed: 1, NextVisibleAt: at(lease)}},
		{"when the lease ends", at(lease), baton.MessageStats{Visible: 3, Delayed: 1, NextVisibleAt: at(100 * time.Second)}},
		{"when the delay ends", at(100 * time.Second), baton.MessageStats{Visible: 4}},
	} {
		checkStats(t, "stats "+c.name, MustStats(t, s, q.ID, c.now), c.want)
	}
	// Counting leases nothing.
	checkIDs(t, "receive after counting", mustReceive(t, s, q.ID, at(100*time.Second), at(100*time.Second+lease), 10),
		MessageID(1), MessageID(2), MessageID(3), MessageID(4))
}

// With a Bound the visible and delayed counts may stop there, but never
// below it (nor below the count, if smaller); the rest stays exact.
func testMessageStatsBound(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	MustSend(t, s, q.ID, NewMessage(1, base), NewMessage(2, base))
	mustReceive(t, s, q.ID, base, at(lease), 2)
	var msgs []*baton.Message
	for n := 3; n <= 8; n++ {
		m := NewMessage(n, base)
		if n > 5 {
			m.VisibleAt = at(time.Duration(n) * time.Second)
		}
		msgs = append(msgs, m)
	}
	MustSend(t, s, q.ID, msgs...) // 3 visible, 3 delayed
	stats := func(now time.Time, bound int) baton.MessageStats {
		t.Helper()
		st, err := s.MessageStats(t.Context(), baton.MessageStatsParams{QueueID: q.ID, Now: now, Bound: bound})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	for _, bound := range []int{1, 2, 3, 100} {
		st := stats(base, bound)
		if st.Visible < min(bound, 3) || st.Visible > 3 || st.Delayed < min(bound, 3) || st.Delayed > 3 {
			t.Errorf("bound %d: visible %d and delayed %d, want each between %d and 3", bound, st.Visible, st.Delayed, min(bound, 3))
		}
		if st.InFlight != 2 || !st.NextVisibleAt.Equal(at(6*time.Second)) || !st.OldestSentAt.Equal(base) {
			t.Errorf("bound %d: got %s, want 2 in flight, next visible at 6s and the oldest sent at base", bound, fmtStats(st))
		}
	}
	// Nothing visible is 0 under any bound.
	mustReceive(t, s, q.ID, base, at(lease), 3)
	if st := stats(base, 1); st.Visible != 0 || st.InFlight != 5 {
		t.Errorf("bound 1 with nothing visible: got %s, want 0 visible and 5 in flight", fmtStats(st))
	}
}

func testMessageStatsNextVisibleAtIsEarliest(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	MustSend(t, s, q.ID, NewMessage(1, base))
	mustReceiveOne(t, s, q.ID, base, at(lease), MessageID(1))
	delayed := NewMessage(2, base)
	delayed.VisibleAt = at(5 * time.Second)
	MustSend(t, s, q.ID, delayed)
	checkStats(t, "stats with a delay ending before a lease", MustStats(t, s, q.ID, base),
		baton.MessageStats{InFlight: 1, Delayed: 1, NextVisibleAt: at(5 * time.Second)})
	checkStats(t, "stats after the delay ends", MustStats(t, s, q.ID, at(5*time.Second)),
		baton.MessageStats{Visible: 1, InFlight: 1, NextVisibleAt: at(lease)})
}

func testMessageStatsEmpty(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	checkStats(t, "stats of a new queue", MustStats(t, s, q.ID, base), baton.MessageStats{})
}

func testMessageStatsUnknownQueue(t *testing.T, s baton.Store) {
	_, err := s.MessageStats(t.Context(), baton.MessageStatsParams{QueueID: QueueID(1), Now: base})
	checkErr(t, "stats of an unknown queue", err, baton.ErrNotFound)
}

// ---------------------------------------------------------------------------
// MessageExpire

func testMessageExpireOnlyOlder(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	other := mustCreate(t, s, 2, "other")
	MustSend(t, s, other.ID, NewMessage(100, base))

	// An old message in flight, an old visible one, an old delayed one, one
	// sent at the cutoff and a newer one.
	MustSend(t, s, q.ID, NewMessage(1, base))
	inFlight := mustReceiveOne(t, s, q.ID, base, at(time.Hour), MessageID(1))
	delayed := NewMessage(3, at(2*time.Second))
	delayed.VisibleAt = at(500 * time.Second)
	MustSend(t, s, q.ID, NewMessage(2, at(time.Second)), delayed, NewMessage(4, at(10*time.Second)), NewMessage(5, at(20*time.Second)))

	expire := func(cutoff time.Time) int {
		t.Helper()
		n, err := s.MessageExpire(t.Context(), q.ID, cutoff)
		if err != nil {
			t.Fatalf("expire before %v: %v", cutoff, err)
		}
		return n
	}
	if got := expire(at(10 * time.Second)); got != 3 {
		t.Errorf("expire before +10s: got %d, want 3", got)
	}
	checkStats(t, "stats after expiring", MustStats(t, s, q.ID, at(30*time.Second)), baton.MessageStats{Visible: 2})
	checkResult(t, "delete the expired in-flight message",
		MustDelete(t, s, baton.MessageDeleteParams{QueueID: q.ID, MessageID: inFlight.ID, Epoch: inFlight.Epoch, Now: at(30 * time.Second)}),
		baton.LeaseGone)
	checkStats(t, "stats of another queue", MustStats(t, s, other.ID, at(30*time.Second)), baton.MessageStats{Visible: 1})
	if got := expire(at(10 * time.Second)); got != 0 {
		t.Errorf("expire before +10s again: got %d, want 0", got)
	}
	checkIDs(t, "receive after expiring", mustReceive(t, s, q.ID, at(1000*time.Second), at(1000*time.Second+lease), 10),
		MessageID(4), MessageID(5))
	if got := expire(at(time.Hour)); got != 2 {
		t.Errorf("expire before +1h: got %d, want 2", got)
	}
	checkStats(t, "stats after expiring everything", MustStats(t, s, q.ID, at(2*time.Hour)), baton.MessageStats{})
	if got := expire(at(time.Hour)); got != 0 {
		t.Errorf("expire an empty queue: got %d, want 0", got)
	}
}

func testMessageExpireUnknownQueue(t *testing.T, s baton.Store) {
	_, err := s.MessageExpire(t.Context(), QueueID(1), base)
	checkErr(t, "expire in an unknown queue", err, baton.ErrNotFound)
}

// ---------------------------------------------------------------------------
// Concurrency

// testConcurrentReceiveLeasesOnce has receivers race for one queue's
// messages, all within one lease period: no message may be leased twice.
func testConcurrentReceiveLeasesOnce(t *testing.T, s baton.Store) {
	receiveLeasesOnce(t, s, func(n int) *baton.Message { return NewMessage(n, base) })
}

// testConcurrentFairReceiveLeasesOnce is testConcurrentReceiveLeasesOnce
// on a fair queue: a third of its messages without a group id, the rest in
// five groups.
func testConcurrentFairReceiveLeasesOnce(t *testing.T, s baton.Store) {
	receiveLeasesOnce(t, s, func(n int) *baton.Message {
		if n%3 == 0 {
			return NewMessage(n, base)
		}
		return NewGroupMessage(n, fmt.Sprint("g", n%5), base)
	})
}

// receiveLeasesOnce races receivers over the messages newMessage makes.
func receiveLeasesOnce(t *testing.T, s baton.Store, newMessage func(n int) *baton.Message) {
	const receivers, messages = 8, 200
	q := mustCreate(t, s, 1, "orders")
	for i := 0; i < messages; i += baton.MaxBatchEntries {
		var batch []*baton.Message
		for j := i; j < i+baton.MaxBatchEntries; j++ {
			batch = append(batch, newMessage(j+1))
		}
		MustSend(t, s, q.ID, batch...)
	}

	got := make([][]*baton.Message, receivers+1)
	var wg sync.WaitGroup
	for r := range receivers {
		wg.Go(func() {
			// Each receiver's clock is a little apart, as on several nodes.
			now := at(time.Second + time.Duration(r)*time.Millisecond)
			for {
				msgs, err := s.MessageReceive(t.Context(), baton.MessageReceiveParams{
					QueueID: q.ID, Now: now, Max: 3, VisibleAt: at(lease), RetentionCutoff: now.Add(-retention),
				})
				if err != nil {
					t.Errorf("receiver %d: %v", r, err)
					return
				}
				if len(msgs) == 0 {
					return
				}
				got[r] = append(got[r], msgs...)
			}
		})
	}
	wg.Wait()
	// A store that skips locked rows may let a receiver stop early; collect
	// what is left.
	got[receivers] = mustReceive(t, s, q.ID, at(2*time.Second), at(lease), messages)

	seen := make(map[string]int)
	for r, msgs := range got {
		for _, m := range msgs {
			if prev, ok := seen[m.ID]; ok {
				t.Errorf("message %s leased by receiver %d and again by receiver %d", m.ID, prev, r)
			}
			seen[m.ID] = r
			if m.Epoch != 1 || m.ReceiveCount != 1 {
				t.Errorf("message %s: Epoch %d, ReceiveCount %d, want 1 and 1", m.ID, m.Epoch, m.ReceiveCount)
			}
		}
	}
	if len(seen) != messages {
		t.Errorf("leased %d distinct messages, want %d", len(seen), messages)
	}
	checkStats(t, "stats after the race", MustStats(t, s, q.ID, at(2*time.Second)),
		baton.MessageStats{InFlight: messages, NextVisibleAt: at(lease)})
}

// testConcurrentSendAndReceive has senders and receivers run at once: every
// message sent is received exactly once.
func testConcurrentSendAndReceive(t *testing.T, s baton.Store) {
	const senders, receivers, perSender = 4, 4, 50
	q := mustCreate(t, s, 1, "orders")
	now := at(time.Second)

	var sending, receiving sync.WaitGroup
	done := make(chan struct{})
	for w := range senders {
		sending.Go(func() {
			for i := range perSender {
				m := NewMessage(w*perSender+i+1, now)
				if _, err := s.MessageSend(t.Context(), baton.MessageSendParams{QueueID: q.ID, Messages: []*baton.Message{m}}); err != nil {
					t.Errorf("sender %d: %v", w, err)
					return
				}
			}
		})
	}
	got := make([][]*baton.Message, receivers+1)
	for r := range receivers {
		receiving.Go(func() {
			for {
				msgs, err := s.MessageReceive(t.Context(), baton.MessageReceiveParams{
					QueueID: q.ID, Now: now, Max: 5, VisibleAt: now.Add(lease), RetentionCutoff: now.Add(-retention),
				})
				if err != nil {
					t.Errorf("receiver %d: %v", r, err)
					return
				}
				got[r] = append(got[r], msgs...)
				if len(msgs) == 0 {
					select {
					case <-done:
						return
					default:
						runtime.Gosched()
					}
				}
			}
		})
	}
	sending.Wait()
	close(done)
	receiving.Wait()
	got[receivers] = mustReceive(t, s, q.ID, now, now.Add(lease), senders*perSender)

	seen := make(map[string]bool)
	for _, msgs := range got {
		for _, m := range msgs {
			if seen[m.ID] {
				t.Errorf("message %s received twice within one lease", m.ID)
			}
			seen[m.ID] = true
		}
	}
	if len(seen) != senders*perSender {
		t.Errorf("received %d distinct messages, want %d", len(seen), senders*perSender)
	}
}

// testConcurrentDeleteOnce has several holders of one receipt delete at
// once: exactly one finds the live lease, the others find the message gone.
func testConcurrentDeleteOnce(t *testing.T, s baton.Store) {
	const deleters = 8
	q := mustCreate(t, s, 1, "orders")
	MustSend(t, s, q.ID, NewMessage(1, base))
	mustReceiveOne(t, s, q.ID, base, at(lease), MessageID(1))

	results := make([]baton.LeaseResult, deleters)
	var wg sync.WaitGroup
	for d := range deleters {
		wg.Go(func() {
			out, err := s.MessageDelete(t.Context(), baton.MessageDeleteParams{QueueID: q.ID, MessageID: MessageID(1), Epoch: 1, Now: at(time.Second)})
			if err != nil {
				t.Errorf("deleter %d: %v", d, err)
			}
			results[d] = out.Result
		})
	}
	wg.Wait()
	current := 0
	for d, r := range results {
		switch r {
		case baton.LeaseCurrent:
			current++
		case baton.LeaseGone:
		default:
			t.Errorf("deleter %d: got %s, want LeaseCurrent or LeaseGone", d, resultName(r))
		}
	}
	if current != 1 {
		t.Errorf("%d deletes found the live lease, want 1", current)
	}
	checkStats(t, "stats after the deletes", MustStats(t, s, q.ID, at(time.Second)), baton.MessageStats{})
}
