package pebblestore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/baton-sqs/baton/store/storetest"
)

// Check finds nothing wrong in an intact store, closed or cut off.
func TestCheckIntact(t *testing.T) {
	t.Parallel()
	for _, crashed := range []bool{false, true} {
		dir := damageFixture(t, crashed)
		r, err := pebblestore.Check(t.Context(), dir)
		if err != nil {
			t.Fatal(err)
		}
		if r.Damaged() || r.Queues != fixtureQueues || r.Messages != fixtureQueues*fixtureMessages {
			t.Errorf("crashed=%t: %+v, want %d queues, %d messages, no damage", crashed, r, fixtureQueues, fixtureQueues*fixtureMessages)
		}
	}
}

// Check refuses to run on a directory a server has open.
// Check of a directory that holds no store (an empty one, one that does
// not exist: a mistyped --data-dir) says so and writes nothing: it leaves
// no lock file behind, nor makes the directory.
func TestCheckOfNoStoreWritesNothing(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	missing := filepath.Join(t.TempDir(), "nosuch")
	for _, dir := range []string{empty, missing} {
		if _, err := pebblestore.Check(t.Context(), dir); err == nil || !strings.Contains(err.Error(), "holds no log") {
			t.Errorf("Check(%s): %v, want an error saying it holds no log", dir, err)
		}
	}
	if entries, err := os.ReadDir(empty); err != nil || len(entries) != 0 {
		t.Errorf("Check of an empty directory left %v (%v) in it, want nothing", entries, err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Check of a directory that does not exist made it: %v", err)
	}
}

func TestCheckLocked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := MustOpen(t, dir)
	defer s.Close()
	if _, err := pebblestore.Check(t.Context(), dir); !errors.Is(err, pebblestore.ErrLocked) {
		t.Errorf("check of an open store: %v, want ErrLocked", err)
	}
}

// A damaged table: Check names it and the messages it cost; Salvage copies
// the rest into a store that opens, and lists the same messages as lost.
func TestCheckAndSalvageDamagedTable(t *testing.T) {
	t.Parallel()
	dir := damageFixture(t, false)
	rewrite(t, logFile(t, dir, "*.sst"), flipAt(0.5, 0))

	r, err := pebblestore.Check(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Damaged() || !strings.Contains(strings.Join(r.Problems, "\n"), ".sst is damaged") {
		t.Fatalf("check: %+v, want the table named", r)
	}
	t.Logf("check: %d messages intact, problems %q, lost %v", r.Messages, r.Problems, r.Lost)
	if r.Messages+len(r.Lost) < fixtureQueues*fixtureMessages/2 {
		t.Errorf("check accounts for %d intact and %d lost messages", r.Messages, len(r.Lost))
	}

	to := filepath.Join(t.TempDir(), "salvaged")
	sr, err := pebblestore.Salvage(t.Context(), dir, to)
	if err != nil {
		t.Fatal(err)
	}
	if sr.Messages != r.Messages || len(sr.Lost) != len(r.Lost) {
		t.Errorf("salvage copied %d and lost %d, check said %d and %d", sr.Messages, len(sr.Lost), r.Messages, len(r.Lost))
	}
	s, _, err := openLogged(t, to)
	if err != nil {
		t.Fatalf("open the salvaged store: %v", err)
	}
	defer s.Close()
	if got := countMessages(t, s); got != sr.Messages {
		t.Errorf("the salvaged store holds %d messages, salvage said %d", got, sr.Messages)
	}
	again, err := pebblestore.Check(t.Context(), dir)
	if err != nil || len(again.Problems) != len(r.Problems) {
		t.Errorf("salvage changed the source: %+v, %v", again, err)
	}
}

// A log Pebble cannot open (a table or the current MANIFEST deleted):
// Salvage has nothing to copy, and fails with ErrDamaged naming the file,
// making no directory. Before, it made an empty store there and returned
// no error: `baton store salvage` printed "0 messages lost" and exited 0,
// and a server started on the copy served nothing.
func TestSalvageRefusesLogPebbleCannotOpen(t *testing.T) {
	t.Parallel()
	for _, pattern := range []string{"*.sst", "MANIFEST-*"} {
		dir := damageFixture(t, false)
		gone := logFile(t, dir, pattern)
		if err := os.Remove(gone); err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(t.TempDir(), "salvaged")
		r, err := pebblestore.Salvage(t.Context(), dir, to)
		want := strings.TrimSuffix(filepath.Base(gone), ".sst")
		if !errors.Is(err, pebblestore.ErrDamaged) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s deleted: salvage: %v (report %+v), want ErrDamaged naming %s", pattern, err, r, want)
		}
		if _, err := os.Stat(to); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s deleted: %s made (%v), want nothing made", pattern, to, err)
		}
		if _, err := pebblestore.Check(t.Context(), dir); err != nil {
			t.Errorf("%s deleted: check after the salvage: %v (the lock still held?)", pattern, err)
		}
	}
}

// A table the MANIFEST no longer lists is noted, not counted as damage.
func TestCheckNotesUnlistedTables(t *testing.T) {
	t.Parallel()
	dir := damageFixture(t, false)
	stray := filepath.Join(dir, pebblestore.LogDir, "999999.sst")
	rewrite(t, logFile(t, dir, "*.sst"), func(b []byte) []byte {
		if err := os.WriteFile(stray, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return b
	})
	r, err := pebblestore.Check(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Damaged() || len(r.Unlisted) != 1 || r.Unlisted[0] != stray {
		t.Errorf("check: damaged %t, unlisted %v; want no damage and %s noted", r.Damaged(), r.Unlisted, stray)
	}
}

// Salvage copies SNS topics with the queues.
func TestSalvageCopiesTopics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := MustOpen(t, dir)
	tp := storetest.MustCreateTopic(t, s, "events", nil)
	mustClose(t, s)
	to := filepath.Join(t.TempDir(), "salvaged")
	if _, err := pebblestore.Salvage(t.Context(), dir, to); err != nil {
		t.Fatal(err)
	}
	s = MustOpen(t, to)
	defer s.Close()
	if _, err := s.TopicGet(t.Context(), tp.Region, tp.Account, tp.Name); err != nil {
		t.Errorf("the salvaged store lacks topic %s: %v", tp.Name, err)
	}
}
