package sqlitestore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/store/storetest"
)

// TestWriteFixture writes, into $BATON_WRITE_FIXTURE, the data directory
// the conversion tests of the embedded store read: what this release of the
// store leaves on disk when killed, dead rows of a purged and a deleted
// queue not reclaimed yet, commits still in the write-ahead log.
func TestWriteFixture(t *testing.T) {
	out := os.Getenv("BATON_WRITE_FIXTURE")
	if out == "" {
		t.Skip("set BATON_WRITE_FIXTURE to a directory to write the fixture")
	}
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) time.Time { return base.Add(d) }
	dir := t.TempDir()
	s, err := Open(t.Context(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	HoldReclaim(s) // the dead rows stay

	orders := storetest.NewQueue(storetest.QueueID(1), "orders")
	orders.Tags = map[string]string{"team": "billing"}
	orders.Attributes.VisibilityTimeout = 45
	jobs := storetest.NewFIFOQueue(storetest.QueueID(2), "jobs.fifo")
	purged := storetest.NewQueue(storetest.QueueID(3), "purged")
	gone := storetest.NewQueue(storetest.QueueID(4), "gone")
	dlq := storetest.NewQueue(storetest.QueueID(5), "dlq")
	west := storetest.NewQueue(storetest.QueueID(6), "orders")
	west.Region = "eu-west-1"
	for _, q := range []*baton.Queue{orders, jobs, purged, gone, dlq, west} {
		storetest.MustCreateQueue(t, s, q)
	}

	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	msgs := make([]*baton.Message, 6)
	for n := range msgs {
		msgs[n] = storetest.NewMessage(n+1, base)
	}
	msgs[0].Attributes = map[string]baton.MessageAttribute{
		"s": {DataType: "String", StringValue: "välue ✓"},
		"n": {DataType: "Number.int", StringValue: "42"},
		"b": {DataType: "Binary", BinaryValue: binary},
	}
	msgs[0].TraceHeader = "Root=1-5759e988-bd862e3fe1be46a994272793"
	msgs[0].Body = "tab\tnewline\ncr\r ünïcödé 🚀 <&>\"'"
	msgs[1].Body = strings.Repeat("0123456789abcdef", 256) // 4 KiB
	msgs[2].VisibleAt = at(10 * time.Minute)                // delayed
	for _, m := range msgs {
		m.BodyMD5 = engine.MD5OfBody(m.Body)
	}
	storetest.MustSend(t, s, orders.ID, msgs...)
	recv := func(q uint64, now, until time.Time, max int) []*baton.Message {
		return storetest.MustReceive(t, s, baton.MessageReceiveParams{QueueID: q, Now: now, Max: max, VisibleAt: until,
			RetentionCutoff: now.Add(-96 * time.Hour)})
	}
	// Messages 1 and 2 leased; 4 deleted; 5 released; 6 moved to the
	// dead-letter queue.
	got := recv(orders.ID, at(time.Second), at(time.Hour), 2)
	if len(got) != 2 {
		t.Fatalf("received %d", len(got))
	}
	rest := recv(orders.ID, at(2*time.Second), at(time.Hour), 10)
	byID := map[string]*baton.Message{}
	for _, m := range rest {
		byID[m.ID] = m
	}
	m4, m5, m6 := byID[storetest.MessageID(4)], byID[storetest.MessageID(5)], byID[storetest.MessageID(6)]
	if len(rest) != 3 || m4 == nil || m5 == nil || m6 == nil {
		t.Fatalf("second receive got %d", len(rest))
	}
	if _, err := s.MessageDelete(t.Context(), baton.MessageDeleteParams{QueueID: orders.ID, MessageID: m4.ID, Epoch: m4.Epoch, Now: at(3 * time.Second), RequireLive: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MessageChangeVisibility(t.Context(), baton.MessageChangeVisibilityParams{QueueID: orders.ID, MessageID: m5.ID, Epoch: m5.Epoch, Now: at(3 * time.Second), VisibleAt: at(3 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MessageMove(t.Context(), baton.MessageMoveParams{QueueID: orders.ID, ToQueueID: dlq.ID, MessageID: m6.ID, Epoch: m6.Epoch,
		Now: at(4 * time.Second), ReceiveCount: 1, DeadLetterSourceARN: "arn:aws:sqs:us-east-1:" + storetest.Account + ":orders"}); err != nil {
		t.Fatal(err)
	}

	// FIFO: two groups, one duplicate.
	var fifo []*baton.Message
	for n := 11; n <= 15; n++ {
		g := "g1"
		if n > 13 {
			g = "g2"
		}
		fifo = append(fifo, storetest.NewGroupMessage(n, g, at(5*time.Second)))
	}
	storetest.MustSendFIFO(t, s, jobs.ID, at(5*time.Second), fifo...)
	dup := storetest.NewGroupMessage(16, "g1", at(6*time.Second))
	dup.DedupID = fifo[0].DedupID
	if sent := storetest.MustSendFIFO(t, s, jobs.ID, at(6*time.Second), dup); !sent[0].Duplicate {
		t.Fatal("duplicate not detected")
	}
	if got := recv(jobs.ID, at(7*time.Second), at(time.Hour), 1); len(got) != 1 {
		t.Fatal("FIFO receive")
	}

	storetest.MustSend(t, s, purged.ID, storetest.NewMessage(21, base), storetest.NewMessage(22, base))
	if err := s.QueuePurge(t.Context(), baton.QueuePurgeParams{Region: storetest.Region, Account: storetest.Account, Name: "purged", Now: at(8 * time.Second), PurgedCutoff: at(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	storetest.MustSend(t, s, purged.ID, storetest.NewMessage(23, at(9*time.Second)))
	storetest.MustSend(t, s, gone.ID, storetest.NewMessage(31, base), storetest.NewMessage(32, base))
	if err := s.QueueDelete(t.Context(), storetest.Region, storetest.Account, "gone", at(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	storetest.MustSend(t, s, west.ID, storetest.NewMessage(41, base))

	arn := "arn:aws:sqs:us-east-1:" + storetest.Account + ":dlq"
	for _, task := range []baton.MoveTask{
		{Handle: "done", SourceARN: arn, DestinationARN: arn + "-2", Status: "COMPLETED", Moved: 4, ToMove: 4, StartedAt: at(0)},
		{Handle: "running", SourceARN: arn, MaxPerSecond: 5, Status: "RUNNING", Moved: 2, ToMove: 9, StartedAt: at(time.Minute)},
	} {
		if err := s.MoveTaskSave(t.Context(), task); err != nil {
			t.Fatal(err)
		}
	}

	// What a kill -9 now leaves, with a lock file and a receipt key beside.
	src := crashCopy(t, dir)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{DatabaseFile, DatabaseFile + "-wal"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(out, "receipt.key"), []byte(strings.Repeat("k", 32)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, LockFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}
