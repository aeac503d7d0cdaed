package pebblestore_test

import (
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/ids"
	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/baton-sqs/baton/store/storetest"
)

// dirSize is the size of the files under dir.
func dirSize(tb testing.TB, dir string) int64 {
	tb.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return nil // removed meanwhile, by a compaction
		}
		n += fi.Size()
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// Sending and deleting many messages while the store serves leaves a data
// directory within twice the live data plus a fixed bound (memtables and
// their logs, the manifest): compactions drop what deletions covered
// without a restart.
func TestDiskReclaimedWhileServing(t *testing.T) {
	t.Parallel()
	const (
		total   = 60000
		bodyLen = 2048
		live    = 1000 // messages kept sent and not yet deleted
		// fixed bounds the rest: memtables and their logs, the
		// manifest, tables not compacted yet.
		fixed = 48 << 20
	)
	if testing.Short() {
		t.Skip("writes 120 MB")
	}
	dir := t.TempDir()
	s, err := pebblestore.Open(t.Context(), dir, pebblestore.Options{Durability: pebblestore.DurabilityRelaxed})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := storetest.NewQueue(storetest.QueueID(1), "churn")
	storetest.MustCreateQueue(t, s, q)
	body := strings.Repeat("d", bodyLen)
	var peak int64
	for sent := 0; sent < total; sent += 10 {
		msgs := make([]*baton.Message, 10)
		for i := range msgs {
			msgs[i] = &baton.Message{ID: ids.NewUUID(), Body: body, SentAt: base, VisibleAt: base}
		}
		storetest.MustSend(t, s, q.ID, msgs...)
		if sent < live {
			continue
		}
		got := receive(t, s, q.ID, base, base.Add(time.Hour), 10)
		entries := make([]baton.LeaseRef, len(got))
		for i, m := range got {
			entries[i] = baton.LeaseRef{MessageID: m.ID, Epoch: m.Epoch}
		}
		if _, err := s.MessageDeleteBatch(t.Context(), baton.MessageDeleteBatchParams{QueueID: q.ID, Now: base, Entries: entries, RequireLive: true}); err != nil {
			t.Fatal(err)
		}
		if sent%5000 == 0 {
			peak = max(peak, dirSize(t, dir))
		}
	}
	liveBytes := int64(live * bodyLen)
	limit := 2*liveBytes + fixed
	var size int64
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if size = dirSize(t, dir); size <= limit || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("%d messages of %d bytes sent and deleted, %d live (%d KiB): data directory peaked at %d MiB, now %d MiB",
		total, bodyLen, live, liveBytes>>10, peak>>20, size>>20)
	if size > limit {
		t.Errorf("data directory of %d MiB a minute after the churn, want at most %d MiB (2 × %d KiB live + %d MiB)",
			size>>20, limit>>20, liveBytes>>10, fixed>>20)
	}
}

// A payload is written once in its life, so its deletion is one that
// vanishes with the write it meets: messages sent and deleted before
// their memtable is flushed leave the tables one tombstone each (their
// state's), not two.
func TestDeletedPayloadsLeaveNoTombstones(t *testing.T) {
	t.Parallel()
	const n = 200
	s, err := pebblestore.Open(t.Context(), t.TempDir(), pebblestore.Options{Durability: pebblestore.DurabilityRelaxed})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := storetest.NewQueue(storetest.QueueID(1), "gone")
	storetest.MustCreateQueue(t, s, q)
	msgs := make([]*baton.Message, n)
	for i := range msgs {
		msgs[i] = &baton.Message{ID: ids.NewUUID(), Body: "payload", SentAt: base, VisibleAt: base}
	}
	storetest.MustSend(t, s, q.ID, msgs...)
	got := receive(t, s, q.ID, base, base.Add(time.Hour), n)
	entries := make([]baton.LeaseRef, len(got))
	for i, m := range got {
		entries[i] = baton.LeaseRef{MessageID: m.ID, Epoch: m.Epoch}
	}
	if len(entries) != n {
		t.Fatalf("received %d of %d", len(entries), n)
	}
	if _, err := s.MessageDeleteBatch(t.Context(), baton.MessageDeleteBatchParams{QueueID: q.ID, Now: base, Entries: entries, RequireLive: true}); err != nil {
		t.Fatal(err)
	}
	if got := pebblestore.FlushedDeletions(t, s); got > n {
		t.Errorf("%d deletions in the tables after %d messages were sent and deleted, want at most %d (one per message's state)", got, n, n)
	}
}

// A backlog drained while nothing else is written still gives its space
// back: the deletions must reach the tables, and compactions drop what
// they cover, without further writes to push them there.
func TestDiskReclaimedWhenIdle(t *testing.T) {
	t.Parallel()
	const (
		total   = 20000
		bodyLen = 2048
		fixed   = 24 << 20 // the memtables' logs, the manifest
	)
	if testing.Short() {
		t.Skip("writes 40 MB")
	}
	dir := t.TempDir()
	s, err := pebblestore.Open(t.Context(), dir, pebblestore.Options{Durability: pebblestore.DurabilityRelaxed})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := storetest.NewQueue(storetest.QueueID(1), "idle")
	storetest.MustCreateQueue(t, s, q)
	rng := rand.New(rand.NewPCG(1, 2))
	for sent := 0; sent < total; sent += 100 {
		msgs := make([]*baton.Message, 100)
		for i := range msgs {
			body := make([]byte, bodyLen)
			for j := range body {
				body[j] = 'a' + byte(rng.IntN(26))
			}
			msgs[i] = &baton.Message{ID: ids.NewUUID(), Body: string(body), SentAt: base, VisibleAt: base}
		}
		storetest.MustSend(t, s, q.ID, msgs...)
	}
	full := dirSize(t, dir)
	for {
		got := receive(t, s, q.ID, base, base.Add(time.Hour), 100)
		if len(got) == 0 {
			break
		}
		entries := make([]baton.LeaseRef, len(got))
		for i, m := range got {
			entries[i] = baton.LeaseRef{MessageID: m.ID, Epoch: m.Epoch}
		}
		if _, err := s.MessageDeleteBatch(t.Context(), baton.MessageDeleteBatchParams{QueueID: q.ID, Now: base, Entries: entries, RequireLive: true}); err != nil {
			t.Fatal(err)
		}
	}
	var size int64
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if size = dirSize(t, dir); size <= fixed || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("%d messages of %d bytes sent, then all deleted: data directory %d MiB full, %d MiB once idle", total, bodyLen, full>>20, size>>20)
	if size > fixed {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := d.Info(); err == nil {
					t.Logf("left: %s, %d bytes", p, fi.Size())
				}
			}
			return nil
		})
		t.Errorf("data directory of %d MiB a minute after the backlog was drained, want at most %d MiB", size>>20, fixed>>20)
	}
}
