package pebblestore_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/baton-sqs/baton/store/storetest"
)

// openLogged opens dir with its log written to the returned buffer.
func openLogged(t *testing.T, dir string) (*pebblestore.Store, *logbuf.Buffer, error) {
	t.Helper()
	var buf logbuf.Buffer
	s, err := pebblestore.Open(t.Context(), dir, pebblestore.Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	return s, &buf, err
}

// Each fixture queue holds fixtureMessages messages: half in a table, half
// in the write-ahead log only.
const fixtureQueues, fixtureMessages = 2, 40

// damageFixture writes a store in a new directory: fixtureQueues queues of
// fixtureMessages messages, the first half of each flushed to tables (so
// the MANIFEST has several records). If crashed, it returns a copy of the
// directory taken while the store was open, as a kill leaves it;
// otherwise the store is closed cleanly.
func damageFixture(t *testing.T, crashed bool) string {
	t.Helper()
	dir := t.TempDir()
	s := MustOpen(t, dir)
	for half := range 2 {
		for qi := 1; qi <= fixtureQueues; qi++ {
			if half == 0 {
				storetest.MustCreateQueue(t, s, storetest.NewQueue(storetest.QueueID(qi), fmt.Sprintf("q%d", qi)))
			}
			for i := range fixtureMessages / 2 {
				n := qi*1000 + half*fixtureMessages/2 + i
				storetest.MustSend(t, s, storetest.QueueID(qi), storetest.NewMessage(n, base))
			}
		}
		if half == 0 {
			pebblestore.Flush(t, s)
		}
	}
	if !crashed {
		mustClose(t, s)
		return dir
	}
	cp := t.TempDir()
	copyDir(t, dir, cp)
	mustClose(t, s)
	return cp
}

// copyDir copies the files of src into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// logFile returns the path of the (last, by name) file of the log in dir
// whose name matches pattern.
func logFile(t *testing.T, dir, pattern string) string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, pebblestore.LogDir, pattern))
	if err != nil || len(names) == 0 {
		t.Fatalf("no %s in %s: %v", pattern, dir, err)
	}
	return names[len(names)-1]
}

// rewrite applies change to the bytes of the file at path.
func rewrite(t *testing.T, path string, change func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, change(b), 0o600); err != nil {
		t.Fatal(err)
	}
}

func flipAt(frac float64, back int) func([]byte) []byte {
	return func(b []byte) []byte {
		i := int(float64(len(b))*frac) - back
		b[i] ^= 0x5a
		return b
	}
}

// listing lists the files of dir's log with their sizes, or is empty if
// there is no log.
func listing(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, pebblestore.LogDir))
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %d\n", e.Name(), fi.Size())
	}
	return b.String()
}

// countMessages counts the messages of the fixture's queues that are
// there.
func countMessages(t *testing.T, s *pebblestore.Store) int {
	t.Helper()
	n := 0
	for qi := 1; qi <= fixtureQueues; qi++ {
		st, err := s.MessageStats(t.Context(), baton.MessageStatsParams{QueueID: storetest.QueueID(qi), Now: base})
		if errors.Is(err, baton.ErrNotFound) {
			continue // its queue is gone: the messages are not counted
		}
		if err != nil {
			t.Fatalf("queue %d: %v", qi, err)
		}
		n += st.Visible
	}
	return n
}

// A store closed cleanly, and one cut off as a kill cuts it, open without a
// warning and say what they loaded.
func TestOpenIntactSaysWhatItLoaded(t *testing.T) {
	t.Parallel()
	for _, crashed := range []bool{false, true} {
		t.Run(fmt.Sprintf("crashed=%t", crashed), func(t *testing.T) {
			t.Parallel()
			dir := damageFixture(t, crashed)
			for round := range 2 { // the second open checks the mark the first left
				s, logs, err := openLogged(t, dir)
				if err != nil {
					t.Fatalf("open %d: %v", round, err)
				}
				if got := countMessages(t, s); got != fixtureQueues*fixtureMessages {
					t.Errorf("open %d: %d messages, want %d", round, got, fixtureQueues*fixtureMessages)
				}
				mustClose(t, s)
				out := logs.String()
				want := fmt.Sprintf("queues=%d messages=%d", fixtureQueues, fixtureMessages*fixtureQueues)
				if !strings.Contains(out, "pebblestore: loaded the log") || !strings.Contains(out, want) {
					t.Errorf("open %d logged %q, want the loaded line with %s", round, out, want)
				}
				if warned := storeWarnings(out); warned != "" {
					t.Errorf("open %d of an intact store warned: %s", round, warned)
				}
			}
		})
	}
}

// storeWarnings are the warning and error lines of out that speak of the
// store, not of the machine the test runs on: a disk nearly full (a
// shared test machine's, under 10 % free) warns at every open, true of the
// disk and nothing to do with the store's state.
func storeWarnings(out string) string {
	var b strings.Builder
	for line := range strings.Lines(out) {
		if (strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR")) && !strings.Contains(line, "the disk is filling up") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// Damage that would lose acknowledged messages without a word refuses to
// open, with ErrDamaged naming the file and what contradicts what.
func TestOpenRefusesDamage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		crashed bool
		damage  func(t *testing.T, dir string)
		want    []string // in the error
	}{
		{"newest WAL truncated", false, func(t *testing.T, dir string) {
			rewrite(t, logFile(t, dir, "*.log"), func(b []byte) []byte { return b[:len(b)/2] })
		}, []string{pebblestore.MarkFile, ".log", "lost its end"}},
		{"newest WAL zeroed", false, func(t *testing.T, dir string) {
			rewrite(t, logFile(t, dir, "*.log"), func(b []byte) []byte { clear(b); return b })
		}, []string{pebblestore.MarkFile, "lost its end"}},
		{"newest WAL deleted", false, func(t *testing.T, dir string) {
			os.Remove(logFile(t, dir, "*.log"))
		}, []string{pebblestore.MarkFile, "write-ahead logs were deleted"}},
		{"every WAL deleted, after a crash", true, func(t *testing.T, dir string) {
			names, _ := filepath.Glob(filepath.Join(dir, pebblestore.LogDir, "*.log"))
			for _, n := range names {
				os.Remove(n)
			}
		}, []string{pebblestore.MarkFile, "write-ahead logs were deleted"}},
		{"newest WAL byte flipped near its end", false, func(t *testing.T, dir string) {
			rewrite(t, logFile(t, dir, "*.log"), flipAt(1, 200))
		}, []string{".log", "damaged record"}},
		{"newest WAL's last record flipped", false, func(t *testing.T, dir string) {
			rewrite(t, logFile(t, dir, "*.log"), flipAt(1, 30))
		}, []string{pebblestore.MarkFile, "lost its end"}},
		{"newest WAL byte flipped in the middle, after a crash", true, func(t *testing.T, dir string) {
			rewrite(t, logFile(t, dir, "*.log"), flipAt(0.5, 0))
		}, []string{".log has a damaged record at offset", "says it was synced"}},
		{"MANIFEST byte flipped", false, func(t *testing.T, dir string) {
			rewrite(t, logFile(t, dir, "MANIFEST-*"), flipAt(0, -20))
		}, []string{"MANIFEST-", "damaged record at offset"}},
		{"OPTIONS byte flipped", false, func(t *testing.T, dir string) {
			rewrite(t, logFile(t, dir, "OPTIONS-*"), flipAt(0.5, 0))
		}, []string{"OPTIONS-", "does not parse", "delete it"}},
		{"manifest marker deleted", false, func(t *testing.T, dir string) {
			os.Remove(logFile(t, dir, "marker.manifest.*"))
		}, []string{"no marker naming its current MANIFEST", ".sst"}},
		{"format version marker deleted", false, func(t *testing.T, dir string) {
			os.Remove(logFile(t, dir, "marker.format-version.*"))
		}, []string{"no marker of its format", "`touch "}},
		{"table's first block flipped", false, func(t *testing.T, dir string) {
			rewrite(t, logFile(t, dir, "*.sst"), flipAt(0, -100))
		}, []string{"file 0", "checksum mismatch"}},
		{"format record lost", false, func(t *testing.T, dir string) {
			if err := pebblestore.DeleteKeys(dir, pebblestore.FormatKey); err != nil {
				t.Fatal(err)
			}
		}, []string{"not its format record"}},
		{"queue record lost", false, func(t *testing.T, dir string) {
			if err := pebblestore.DeleteKeys(dir, pebblestore.QueueKey(storetest.QueueID(2))); err != nil {
				t.Fatal(err)
			}
		}, []string{fmt.Sprintf("%d message records of queue id %d", fixtureMessages, storetest.QueueID(2)), "has no record of"}},
		{"log directory deleted", false, func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, pebblestore.LogDir))
		}, []string{"is empty, but", pebblestore.MarkFile}},
		{"mark file damaged", false, func(t *testing.T, dir string) {
			rewrite(t, filepath.Join(dir, pebblestore.MarkFile), flipAt(0, -16))
		}, []string{pebblestore.MarkFile + " is damaged"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := damageFixture(t, c.crashed)
			c.damage(t, dir)
			before := listing(t, dir)
			s, logs, err := openLogged(t, dir)
			if err == nil {
				n := countMessages(t, s)
				s.Close()
				t.Fatalf("opened with %d of %d messages; log:\n%s", n, fixtureQueues*fixtureMessages, logs)
			}
			if !errors.Is(err, pebblestore.ErrDamaged) {
				t.Errorf("error %v, want ErrDamaged", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			// Refusing wrote nothing, deleted nothing: it refuses again.
			if after := listing(t, dir); before != "" && after != before {
				t.Errorf("the refused open changed the log's files:\n%s\nto\n%s", before, after)
			}
			if s, _, err := openLogged(t, dir); err == nil {
				s.Close()
				t.Errorf("the second open went ahead")
			}
		})
	}
}

// Damage to files that hold no data loses nothing: the store opens with
// every message.
func TestOpenDespiteHarmlessDamage(t *testing.T) {
	t.Parallel()
	for name, damage := range map[string]func(t *testing.T, dir string){
		"OPTIONS truncated": func(t *testing.T, dir string) {
			rewrite(t, logFile(t, dir, "OPTIONS-*"), func(b []byte) []byte { return b[:len(b)/2] })
		},
		"OPTIONS deleted": func(t *testing.T, dir string) { os.Remove(logFile(t, dir, "OPTIONS-*")) },
	} {
		dir := damageFixture(t, false)
		damage(t, dir)
		s, _, err := openLogged(t, dir)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := countMessages(t, s); got != fixtureQueues*fixtureMessages {
			t.Errorf("%s: %d messages, want %d", name, got, fixtureQueues*fixtureMessages)
		}
		mustClose(t, s)
	}
}

// Damage Pebble finds as it opens the log is ErrDamaged too, naming the
// file, and what to do about a table missing or cut short.
func TestOpenRefusesMissingTable(t *testing.T) {
	t.Parallel()
	for name, damage := range map[string]func([]byte) []byte{
		"truncated": func(b []byte) []byte { return b[:len(b)/2] },
		"deleted":   nil,
	} {
		dir := damageFixture(t, false)
		table := logFile(t, dir, "*.sst")
		if damage == nil {
			os.Remove(table)
		} else {
			rewrite(t, table, damage)
		}
		s, _, err := openLogged(t, dir)
		if err == nil {
			s.Close()
			t.Fatalf("%s table: opened", name)
		}
		if !errors.Is(err, pebblestore.ErrDamaged) || !strings.Contains(err.Error(), strings.TrimSuffix(filepath.Base(table), ".sst")) {
			t.Errorf("%s table: %v, want ErrDamaged naming %s", name, err, table)
		}
		// Salvage cannot open such a log either: the way out is the file
		// or a backup.
		if !strings.Contains(err.Error(), "latest backup") || strings.Contains(err.Error(), "See `baton store check` and `baton store salvage`") {
			t.Errorf("%s table: %v, want the latest backup named, not salvage", name, err)
		}
	}
}

// The MANIFEST the marker names deleted: the start refuses with
// ErrDamaged naming it and what to do. Before, it said only "read
// …/MANIFEST-000005: … no such file or directory".
func TestOpenRefusesMissingManifest(t *testing.T) {
	t.Parallel()
	dir := damageFixture(t, false)
	manifest := currentManifest(t, dir)
	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	s, _, err := openLogged(t, dir)
	if err == nil {
		s.Close()
		t.Fatal("opened without its MANIFEST")
	}
	if !errors.Is(err, pebblestore.ErrDamaged) || !strings.Contains(err.Error(), manifest+", the MANIFEST its marker names") ||
		!strings.Contains(err.Error(), "latest backup") {
		t.Errorf("open without its MANIFEST: %v, want ErrDamaged naming %s and what to do", err, manifest)
	}
}

// The marker of the log's format (marker.format-version.*, an empty file)
// deleted: Pebble will not open the log, and salvage cannot read it, yet
// nothing is lost. The start and the salvage refuse with ErrDamaged,
// naming the marker and the command that makes it again; made so, the
// store opens with every message. Before, both said only "pebble:
// database already exists and is not pristine", and salvage sent the
// operator to the latest backup.
func TestOpenRefusesMissingFormatMarker(t *testing.T) {
	t.Parallel()
	dir := damageFixture(t, false)
	marker := logFile(t, dir, "marker.format-version.*")
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	touch := regexp.MustCompile("`touch ([^`]+)`")
	s, _, err := openLogged(t, dir)
	if err == nil {
		s.Close()
		t.Fatal("opened without the marker of its format")
	}
	m := touch.FindStringSubmatch(err.Error())
	if !errors.Is(err, pebblestore.ErrDamaged) || !strings.Contains(err.Error(), "no marker of its format") || m == nil {
		t.Fatalf("open without the marker of its format: %v, want ErrDamaged naming it and the touch that makes it again", err)
	}
	// Salvage and check send the operator to the marker, not to a backup:
	// nothing is lost.
	if _, err := pebblestore.Salvage(t.Context(), dir, filepath.Join(t.TempDir(), "salvaged")); err == nil || !strings.Contains(err.Error(), m[0]) || strings.Contains(err.Error(), "backup") {
		t.Errorf("salvage without the marker of its format: %v, want it to name %s and no backup", err, m[0])
	}
	if r, err := pebblestore.Check(t.Context(), dir); err != nil || !r.Unopened || r.MissingMarker != m[1] {
		t.Errorf("check without the marker of its format: %+v, %v; want it unopened, the marker %s to make again", r, err, m[1])
	}
	if err := os.WriteFile(m[1], nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, _, err = openLogged(t, dir)
	if err != nil {
		t.Fatalf("open with the marker made again: %v", err)
	}
	defer mustClose(t, s)
	if got := countMessages(t, s); got != fixtureQueues*fixtureMessages {
		t.Errorf("%d messages with the marker made again, want %d", got, fixtureQueues*fixtureMessages)
	}
}

// log.mark deleted (the remedy for a damaged one): the store starts with
// everything, but that start cannot check the log's end, and says so; a
// new store, and the next start, have nothing to say.
func TestMissingMarkFileSaid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const line = pebblestore.MarkFile + " is missing"
	s, logs, err := openLogged(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	if strings.Contains(logs.String(), line) {
		t.Errorf("a new store's start said %q:\n%s", line, logs)
	}
	if err := os.Remove(filepath.Join(dir, pebblestore.MarkFile)); err != nil {
		t.Fatal(err)
	}
	s, logs, err = openLogged(t, dir)
	if err != nil {
		t.Fatalf("open without %s: %v", pebblestore.MarkFile, err)
	}
	mustClose(t, s)
	if !strings.Contains(logs.String(), line) || !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("the start without %s said:\n%s\nwant a warning that it cannot check the log's end", pebblestore.MarkFile, logs)
	}
	s, logs, err = openLogged(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	if strings.Contains(logs.String(), line) {
		t.Errorf("the start after it said %q again: the file was not written again", line)
	}
}

// A damaged body: the store opens (the start's read of every body logs
// it), a receive that meets it fails with baton.ErrUnavailable and a log
// line naming the message, and the store goes on serving.
func TestDamagedBodyFailsItsReceive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := MustOpen(t, dir)
	q := storetest.NewQueue(storetest.QueueID(1), "bodies")
	storetest.MustCreateQueue(t, s, q)
	bodies := sendIncompressible(t, s, q.ID, 20)
	pebblestore.Flush(t, s)
	mustClose(t, s)
	victim := 7
	rewrite(t, logFile(t, dir, "*.sst"), func(b []byte) []byte {
		i := bytes.Index(b, []byte(bodies[victim][:64]))
		if i < 0 {
			t.Fatal("body not found in the table")
		}
		b[i+10] ^= 0x5a
		return b
	})

	s, logs, err := openLogged(t, dir)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	if !strings.Contains(logs.String(), "holds message bodies it cannot read") || !strings.Contains(logs.String(), ".sst") {
		t.Errorf("the start did not report the damaged table:\n%s", logs)
	}
	var failed error
	for range len(bodies) {
		_, err := s.MessageReceive(t.Context(), baton.MessageReceiveParams{QueueID: q.ID, Now: base, VisibleAt: at(time.Hour), Max: 1})
		if err != nil {
			failed = err
			break
		}
	}
	if !errors.Is(failed, baton.ErrUnavailable) {
		t.Fatalf("receives: %v, want one failing with ErrUnavailable", failed)
	}
	if !strings.Contains(logs.String(), "cannot read a message's body") || !strings.Contains(logs.String(), storetest.MessageID(victim)) {
		t.Errorf("no log line names message %s:\n%s", storetest.MessageID(victim), logs)
	}
	if !strings.Contains(logs.String(), "its receives fail (503). Run `baton store check`") {
		t.Errorf("the damaged body's line does not say to run `baton store check`:\n%s", logs)
	}
	if _, err := s.MessageStats(t.Context(), baton.MessageStatsParams{QueueID: q.ID, Now: base}); err != nil {
		t.Errorf("the store stopped serving: %v", err)
	}
}

// A table damaged while the server runs (its bytes changed on the disk
// after it was written): a receive that reads a body there fails with
// baton.ErrUnavailable, and so does a browse that filters on bodies (no
// call answers as if the messages were not there), the counts stay
// whole, and Ping names the file from then on, also after a restart. A
// compaction that meets the damage fails each time Pebble tries it again,
// at once and for ever: each failed try holds its place a while, rather
// than take a core.
func TestDamagedTableWhileServing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, logs, err := openLogged(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	q := storetest.NewQueue(storetest.QueueID(1), "bodies")
	storetest.MustCreateQueue(t, s, q)
	bodies := sendIncompressible(t, s, q.ID, 20)
	pebblestore.Flush(t, s)
	table := logFile(t, dir, "*.sst")
	rewrite(t, table, func(b []byte) []byte {
		i := bytes.Index(b, []byte(bodies[7][:64]))
		if i < 0 {
			t.Fatal("body not found in the table")
		}
		b[i+10] ^= 0x5a
		return b
	})

	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping before any read met the damage: %v", err)
	}
	_, err = s.MessageBrowse(t.Context(), baton.MessageBrowseParams{QueueID: q.ID, Now: base, Limit: 50, BodyContains: "a"})
	if !errors.Is(err, baton.ErrUnavailable) {
		t.Errorf("browse filtering on bodies: %v, want ErrUnavailable", err)
	}
	var failed error
	received := 0
	for range len(bodies) + 2 {
		got, err := s.MessageReceive(t.Context(), baton.MessageReceiveParams{QueueID: q.ID, Now: base, VisibleAt: at(time.Hour), Max: 1})
		if err != nil {
			failed = err
		}
		received += len(got)
	}
	if !errors.Is(failed, baton.ErrUnavailable) || received == len(bodies) {
		t.Errorf("receives: %d of %d messages, last error %v; want some failing with ErrUnavailable", received, len(bodies), failed)
	}
	if n := strings.Count(logs.String(), "cannot read a message's body"); n == 0 || n > 2 {
		t.Errorf("the failing receives logged %d lines, want one for each of the (at most 2) messages they met:\n%s", n, logs)
	}
	st, err := s.MessageStats(t.Context(), baton.MessageStatsParams{QueueID: q.ID, Now: base})
	if err != nil || st.Visible+st.InFlight != len(bodies) {
		t.Errorf("counts: %+v, %v; want all %d messages", st, err, len(bodies))
	}
	if err := s.Ping(t.Context()); err == nil || !strings.Contains(err.Error(), filepath.Base(table)) ||
		!strings.Contains(err.Error(), "baton store check") {
		t.Errorf("Ping after a receive met the damage: %v, want it to name %s and what to run", err, filepath.Base(table))
	}

	start := time.Now()
	stop := pebblestore.CompactInBackground(s)
	for s.Stats().BackgroundFailures < 3 && time.Since(start) < time.Minute {
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(start)
	stop()
	if n := s.Stats().BackgroundFailures; n < 3 || took < time.Second {
		t.Errorf("a compaction meeting the damage failed %d times in %v, want 3, with a pause between tries", n, took.Round(time.Millisecond))
	}
	if n := strings.Count(logs.String(), "a compaction failed on a damaged table"); n != 1 || strings.Contains(logs.String(), "background write") {
		t.Errorf("the failing compaction was logged %d times, want once (and not as a failing write):\n%s", n, logs)
	}
	mustClose(t, s)

	s, _, err = openLogged(t, dir)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	defer s.Close()
	if err := s.Ping(t.Context()); err == nil || !strings.Contains(err.Error(), filepath.Base(table)) {
		t.Errorf("Ping after a restart that found the damage: %v, want it to name %s", err, filepath.Base(table))
	}
}

// A table whose index block is damaged (rather than a block of its
// data): every read of it fails, receives answer ErrUnavailable and Ping
// names the file from the first. A compaction reading it fails before it
// reopens the table, and Pebble, which sets no table of level 0 aside,
// tried it again at once, thousands of times a second (a core), and held
// the idle compaction waiting for ten minutes. Now each failed try holds
// its place a while, the idle compaction gives way, the failure is logged
// once, and sends go on.
func TestDamagedIndexWhileServing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, logs, err := openLogged(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	q := storetest.NewQueue(storetest.QueueID(1), "bodies")
	storetest.MustCreateQueue(t, s, q)
	sendIncompressible(t, s, q.ID, 20)
	pebblestore.Flush(t, s)
	table := logFile(t, dir, "*.sst")
	off, length := indexBlock(t, table)
	rewrite(t, table, func(b []byte) []byte { b[off+length/2] ^= 0x5a; return b })

	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping before any read met the damage: %v", err)
	}
	if _, err := s.MessageReceive(t.Context(), baton.MessageReceiveParams{QueueID: q.ID, Now: base, VisibleAt: at(time.Hour), Max: 1}); !errors.Is(err, baton.ErrUnavailable) {
		t.Errorf("receive: %v, want ErrUnavailable", err)
	}
	if err := s.Ping(t.Context()); err == nil || !strings.Contains(err.Error(), filepath.Base(table)) ||
		!strings.Contains(err.Error(), "some of what it holds cannot be read") {
		t.Errorf("Ping after a receive met the damage: %v, want it to name %s and say what it means", err, filepath.Base(table))
	}

	// More tables in level 0 make Pebble compact it, the damaged table
	// with the rest.
	for i := range 8 {
		storetest.MustSend(t, s, q.ID, storetest.NewMessage(100+i, base))
		pebblestore.FlushAsync(s)
	}
	deadline := time.Now().Add(time.Minute)
	for s.Stats().BackgroundFailures == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	first, start := s.Stats().BackgroundFailures, time.Now()
	for s.Stats().BackgroundFailures < first+4 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n, took := s.Stats().BackgroundFailures-first, time.Since(start); n < 4 || took < time.Second {
		t.Errorf("compactions meeting the damage failed %d more times in %v, want 4, with a pause after each", n, took.Round(time.Millisecond))
	}

	idle := make(chan struct{})
	go func() { pebblestore.CompactIdle(s); close(idle) }()
	select {
	case <-idle:
	case <-time.After(time.Minute):
		t.Error("the idle compaction did not give way")
	}
	if n := strings.Count(logs.String(), "a compaction failed on a damaged table"); n != 1 || strings.Contains(logs.String(), "background write") {
		t.Errorf("the failing compactions were logged %d times, want once (and not as failing writes):\n%s", n, logs)
	}
	storetest.MustSend(t, s, q.ID, storetest.NewMessage(200, base))
	if err := s.Ping(t.Context()); err == nil || !strings.Contains(err.Error(), filepath.Base(table)) || strings.Contains(err.Error(), "background writes") {
		t.Errorf("Ping while compactions fail: %v, want it to name %s (and no failing disk)", err, filepath.Base(table))
	}
	mustClose(t, s)
}

// indexBlock returns the place of the (top-level) index block of the
// table at path.
func indexBlock(t *testing.T, path string) (off, length uint64) {
	t.Helper()
	f, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	readable, err := sstable.NewSimpleReadable(f)
	if err != nil {
		t.Fatal(err)
	}
	r, err := sstable.NewReader(t.Context(), readable, sstable.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	h := l.TopIndex
	if h.Length == 0 {
		h = l.Index[0]
	}
	return h.Offset, h.Length
}

// The write-ahead log a new data directory writes first, damaged in its
// middle and found so by the start after a crash: the start refuses,
// rather than drop without a word the acknowledged sends after the damage
// (it did: Pebble wrote that log before the log took its format, in
// records that do not say what was synced, so the damage looked like the
// end of the log).
func TestOpenRefusesDamageInFirstWAL(t *testing.T) {
	t.Parallel()
	const sends = 40
	dir := t.TempDir()
	s := MustOpen(t, dir)
	storetest.MustCreateQueue(t, s, storetest.NewQueue(storetest.QueueID(1), "q1"))
	for i := range sends {
		storetest.MustSend(t, s, storetest.QueueID(1), storetest.NewMessage(1000+i, base))
	}
	crashed := t.TempDir()
	copyDir(t, dir, crashed)
	mustClose(t, s)
	rewrite(t, logFile(t, crashed, "*.log"), flipAt(0.5, 0))
	s, logs, err := openLogged(t, crashed)
	if err == nil {
		st, _ := s.MessageStats(t.Context(), baton.MessageStatsParams{QueueID: storetest.QueueID(1), Now: base})
		s.Close()
		t.Fatalf("opened with %d of %d messages; log:\n%s", st.Visible, sends, logs)
	}
	if !errors.Is(err, pebblestore.ErrDamaged) || !strings.Contains(err.Error(), "says it was synced") {
		t.Errorf("open: %v, want ErrDamaged saying the damaged record was synced", err)
	}
}

// sendIncompressible sends n messages to queueID whose bodies do not
// compress, so that each is found in the table it is flushed to, and
// returns the bodies.
func sendIncompressible(t *testing.T, s *pebblestore.Store, queueID uint64, n int) []string {
	t.Helper()
	bodies := make([]string, n)
	for i := range bodies {
		sum := sha256.Sum256([]byte(fmt.Sprint(i)))
		bodies[i] = strings.Repeat(hex.EncodeToString(sum[:]), 40)
		m := storetest.NewMessage(i, base)
		m.Body = bodies[i]
		storetest.MustSend(t, s, queueID, m)
	}
	return bodies
}
