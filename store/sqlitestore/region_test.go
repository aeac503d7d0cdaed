package sqlitestore_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/sqlitestore"
	"github.com/baton-sqs/baton/store/storetest"
)

// TestRegionMigration: a data directory written before queues had a region
// gives its queues, messages and deleted names the region Open is told is
// the default, the one they were served in, once: a later Open with another
// default leaves them where they are.
func TestRegionMigration(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := MustOpen(t, dir)
	q := storetest.NewQueue(storetest.QueueID(1), "orders")
	storetest.MustCreateQueue(t, s, q)
	storetest.MustSend(t, s, q.ID, storetest.NewMessage(1, base))
	gone := storetest.NewQueue(storetest.QueueID(2), "gone")
	storetest.MustCreateQueue(t, s, gone)
	if err := s.QueueDelete(t.Context(), gone.Region, gone.Account, gone.Name, at(time.Second)); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	if err := sqlitestore.UndoRegion(filepath.Join(dir, sqlitestore.DatabaseFile)); err != nil {
		t.Fatal(err)
	}

	open := func(region string) *sqlitestore.Store {
		s, err := sqlitestore.Open(t.Context(), dir, sqlitestore.Options{DefaultRegion: region})
		if err != nil {
			t.Fatalf("open with default region %s: %v", region, err)
		}
		return s
	}
	s = open("eu-west-1")
	got, err := s.QueueGet(t.Context(), "eu-west-1", storetest.Account, "orders")
	if err != nil {
		t.Fatalf("get the migrated queue in the default region: %v", err)
	}
	if got.ID != q.ID || got.Region != "eu-west-1" {
		t.Errorf("migrated queue: id %#x region %q, want id %#x region eu-west-1", got.ID, got.Region, q.ID)
	}
	if _, err := s.QueueGet(t.Context(), storetest.Region, storetest.Account, "orders"); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("get the migrated queue in %s: got %v, want ErrNotFound", storetest.Region, err)
	}
	if st := storetest.MustStats(t, s, q.ID, at(time.Second)); st.Visible != 1 {
		t.Errorf("migrated queue holds %d visible messages, want 1", st.Visible)
	}
	// The deleted name is still refused for a minute, in the default region.
	again := storetest.NewQueue(storetest.QueueID(3), "gone")
	again.Region = "eu-west-1"
	err = s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: again, DeletedCutoff: at(2*time.Second - time.Minute)})
	if !errors.Is(err, baton.ErrDeletedRecently) {
		t.Errorf("re-create the deleted queue at once: got %v, want ErrDeletedRecently", err)
	}
	mustClose(t, s)

	s = open("ap-south-1")
	defer s.Close()
	if _, err := s.QueueGet(t.Context(), "eu-west-1", storetest.Account, "orders"); err != nil {
		t.Errorf("a second Open with another default region moved the queue: %v", err)
	}
	qs, err := s.QueueList(t.Context(), baton.QueueListParams{Region: "ap-south-1"})
	if err != nil || len(qs) != 0 {
		t.Errorf("list ap-south-1: got %d queues, error %v; want none", len(qs), err)
	}
}

// TestOpenRefusesBadRegion: a default region that cannot be one is refused.
func TestOpenRefusesBadRegion(t *testing.T) {
	t.Parallel()
	if s, err := sqlitestore.Open(t.Context(), t.TempDir(), sqlitestore.Options{DefaultRegion: "US East"}); err == nil {
		s.Close()
		t.Fatal("Open accepted the default region \"US East\"")
	}
}
