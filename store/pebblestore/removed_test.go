package pebblestore_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil/poll"
	"github.com/baton-sqs/baton/store/pebblestore"
)

// removedQueue creates a queue in s and sends one message to it.
func removedQueue(t *testing.T, s *pebblestore.Store, id uint64, msg string) *baton.Queue {
	t.Helper()
	q := &baton.Queue{ID: id, Region: "us-east-1", Account: "000000000000", Name: "q", Attributes: baton.DefaultQueueAttributes(),
		CreatedAt: base, ModifiedAt: base}
	if err := s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: q}); err != nil {
		t.Fatal(err)
	}
	if err := removedSend(t, s, q, msg); err != nil {
		t.Fatal(err)
	}
	return q
}

func removedSend(t *testing.T, s *pebblestore.Store, q *baton.Queue, id string) error {
	t.Helper()
	_, err := s.MessageSend(t.Context(), baton.MessageSendParams{QueueID: q.ID,
		Messages: []*baton.Message{{ID: id, Body: id, SentAt: base, VisibleAt: base}}})
	return err
}

// wantRefused checks that a send to q fails with ErrUnavailable naming
// the removed files, and that Ping names them.
func wantRefused(t *testing.T, s *pebblestore.Store, q *baton.Queue, id string) {
	t.Helper()
	if err := removedSend(t, s, q, id); !errors.Is(err, baton.ErrUnavailable) || !strings.Contains(err.Error(), "removed") {
		t.Errorf("send %s once the log's files are removed: %v, want ErrUnavailable naming them", id, err)
	}
	if err := s.Ping(t.Context()); err == nil || !strings.Contains(err.Error(), "removed") {
		t.Errorf("Ping once the log's files are removed: %v, want an error naming them", err)
	}
}

// Files of the data directory removed while the store runs: what it
// commits then goes to files no start will find, so it must not
// acknowledge it. Each call that would change something is refused
// (ErrUnavailable, a 503), Ping says why, calls that only read are
// answered, and Close writes nothing into the directory.
func TestRemovedFilesRefuseChanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove func(t *testing.T, dir string)
	}{
		{"data directory removed", func(t *testing.T, dir string) {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
		}},
		{"data directory moved away", func(t *testing.T, dir string) {
			if err := os.Rename(dir, dir+".old"); err != nil {
				t.Fatal(err)
			}
		}},
		{"write-ahead log removed", func(t *testing.T, dir string) {
			logs, _ := filepath.Glob(filepath.Join(dir, pebblestore.LogDir, "*.log"))
			if len(logs) == 0 {
				t.Fatal("no write-ahead log")
			}
			for _, l := range logs {
				if err := os.Remove(l); err != nil {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			s := MustOpen(t, dir)
			defer s.Close()
			q := removedQueue(t, s, 1, "before")
			tc.remove(t, dir)
			wantRefused(t, s, q, "after")
			wantRefused(t, s, q, "again")
			if _, err := s.QueueGet(t.Context(), q.Region, q.Account, q.Name); err != nil {
				t.Errorf("QueueGet once the log's files are removed: %v", err)
			}
			s.Close()
			if _, err := os.Stat(filepath.Join(dir, pebblestore.MarkFile)); tc.name != "write-ahead log removed" && err == nil {
				t.Errorf("Close wrote %s into the removed directory's place", pebblestore.MarkFile)
			}
		})
	}
}

// The data directory replaced by another (a restored copy, say) while the
// store runs: the store must refuse changes, and its Close must not write
// its mark into the directory now in its place, which would then refuse
// to open.
func TestReplacedDirectoryLeftAlone(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	first := MustOpen(t, dir)
	q := removedQueue(t, first, 1, "first")
	// Reopened, its mark's generation runs ahead of the other's.
	first = reopen(t, reopen(t, first, dir), dir)

	other := filepath.Join(t.TempDir(), "other")
	s := MustOpen(t, other)
	q2 := removedQueue(t, s, 1, "other")
	mustClose(t, s)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, dir); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, first, q, "after")
	first.Close()

	s = MustOpen(t, dir)
	defer s.Close()
	if got := idsOf(receive(t, s, q2.ID, base, at(lease), 10)); len(got) != 1 || got[0] != "other" {
		t.Errorf("the directory put in place holds %v, want [other]", got)
	}
}

// Under DurabilityRelaxed the log's file is looked at once an interval,
// not after each commit (walwatch.go): a send within the interval after
// the data directory went may be acknowledged, but the store refuses
// changes soon after, as under DurabilityFull.
func TestRemovedFilesRefuseChangesRelaxed(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	s, err := pebblestore.Open(t.Context(), dir, pebblestore.Options{Durability: pebblestore.DurabilityRelaxed})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := removedQueue(t, s, 1, "before")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	acked := 0
	for deadline := time.Now().Add(30 * time.Second); ; acked++ {
		err := removedSend(t, s, q, fmt.Sprint("after-", acked))
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sends acknowledged in 30 s after the data directory was removed, want a refusal", acked)
		}
		time.Sleep(time.Millisecond)
	}
	wantRefused(t, s, q, "again")
	t.Logf("%d sends acknowledged before the refusal", acked)
}

// The write-ahead log cut short while the store runs (`truncate -s 0`, a
// shell's `>`, `truncate -s` to some size): what it held past the cut
// would not be replayed by the next start (the file grows back at the
// next write, with zeros in the place of what it held), so changes are
// refused from the first commit after it, as when it is removed; Ping
// says why. (Before, every change was acknowledged and the cut found only
// at the next start; and a cut that kept the file's first 8 bytes, to
// 100 bytes or by 10, was not found at all.)
func TestTruncatedWALRefusesChanges(t *testing.T) {
	for _, d := range []pebblestore.Durability{pebblestore.DurabilityFull, pebblestore.DurabilityRelaxed} {
		for _, cut := range []struct {
			name string
			size func(int64) int64
		}{
			{"to 0", func(int64) int64 { return 0 }},
			{"to 100 bytes", func(int64) int64 { return 100 }},
			{"by 10 bytes", func(n int64) int64 { return n - 10 }},
		} {
			t.Run(d.String()+" "+cut.name, func(t *testing.T) {
				t.Parallel()
				dir := filepath.Join(t.TempDir(), "data")
				s, err := pebblestore.Open(t.Context(), dir, pebblestore.Options{Durability: d})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				q := removedQueue(t, s, 1, "before")
				for i := range 20 {
					if err := removedSend(t, s, q, fmt.Sprint("before-", i)); err != nil {
						t.Fatal(err)
					}
				}
				// Under relaxed the file is looked at once a while: the
				// cut must come after a look that found it whole.
				time.Sleep(150 * time.Millisecond)
				if err := removedSend(t, s, q, "looked"); err != nil {
					t.Fatal(err)
				}
				wal := logFile(t, dir, "*.log")
				info, err := os.Stat(wal)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(wal, cut.size(info.Size())); err != nil {
					t.Fatal(err)
				}
				acked := 0
				for deadline := time.Now().Add(30 * time.Second); ; acked++ {
					err := removedSend(t, s, q, fmt.Sprint("after-", acked))
					if err != nil {
						if !errors.Is(err, baton.ErrUnavailable) || !strings.Contains(err.Error(), "truncated") {
							t.Errorf("send once the write-ahead log is cut: %v, want ErrUnavailable naming the cut", err)
						}
						break
					}
					if d == pebblestore.DurabilityFull || time.Now().After(deadline) {
						t.Fatalf("%d sends acknowledged after the write-ahead log was cut (from %d bytes), want a refusal", acked+1, info.Size())
					}
					time.Sleep(time.Millisecond)
				}
				if err := s.Ping(t.Context()); err == nil || !strings.Contains(err.Error(), "truncated") {
					t.Errorf("Ping once the write-ahead log is cut: %v, want it named", err)
				}
				if _, err := s.QueueGet(t.Context(), q.Region, q.Account, q.Name); err != nil {
					t.Errorf("QueueGet once the write-ahead log is cut: %v", err)
				}
			})
		}
	}
}

// scribbleFS inverts the bytes of each write to a write-ahead log once
// written, as Pebble's in-memory file system does in race builds: a
// writer may not count on them afterwards.
type scribbleFS struct{ vfs.FS }

func (fs scribbleFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return scribbleFile{f}, nil
}

func (fs scribbleFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, c)
	if err != nil {
		return f, err
	}
	return scribbleFile{f}, nil
}

type scribbleFile struct{ vfs.File }

// Write scribbles over p once written, as the file system it stands for
// does: breaking io.Writer's rule is what the test is about.
func (f scribbleFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	for i := range p {
		//lint:ignore SA1023 the file system this stands for reuses the buffer once written
		p[i] ^= 0xff
	}
	return n, err
}

// The check of the write-ahead log's last bytes reads the bytes Pebble
// wrote, not what the file system left in Pebble's buffer: before, on a
// file system that used the buffer once written (Pebble's in-memory one
// in race builds), every write-ahead log looked truncated, and the store
// refused changes after its first commits.
func TestWALCheckKeepsWrittenBytes(t *testing.T) {
	t.Parallel()
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: scribbleFS{vfs.NewMem()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := removedQueue(t, s, 1, "m0")
	for i := 1; i < 20; i++ {
		if err := removedSend(t, s, q, fmt.Sprintf("m%d", i)); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

// A file of the log other than its write-ahead log removed while the
// store runs (a table, the current MANIFEST, the marker naming it):
// Pebble keeps the files it has open and goes on, so nothing failed, but
// the next start cannot open the log, and every change acknowledged is
// out of reach. The store looks at them once a second (filesWatch): Ping
// names the file soon after, with no call made, and changes are refused.
// Before, Ping answered nil and every change was acknowledged, until the

// The marker of the log's format removed while the server runs: Pebble
// never reads it again, so changes go on, but the next start would refuse
// the log without it. Ping names it, and the touch that makes it again,
// until it is back. Before, Ping answered nil and the first sign was the
// next start's refusal.
func TestRemovedFormatMarkerNamed(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	s := MustOpen(t, dir)
	defer s.Close()
	q := removedQueue(t, s, 1, "before")
	marker := logFile(t, dir, "marker.format-version.*")
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	touch := regexp.MustCompile("`touch ([^`]+)`")
	var m []string
	poll.For(t, 30*time.Second, func() error {
		err := s.Ping(t.Context())
		if m = touch.FindStringSubmatch(fmt.Sprint(err)); err == nil || m == nil || !strings.Contains(err.Error(), "marker of the log's format") {
			return fmt.Errorf("Ping once the marker is removed: %v, want it and its touch named", err)
		}
		return nil
	})
	if err := removedSend(t, s, q, "after"); err != nil {
		t.Errorf("send once the marker is removed: %v, want it taken (nothing is lost)", err)
	}
	if err := os.WriteFile(m[1], nil, 0o644); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 30*time.Second, func() error { return s.Ping(t.Context()) })
}

// next start refused.
func TestRemovedLogFileRefusesChanges(t *testing.T) {
	for _, tc := range []struct{ name, pattern, says string }{
		{"table", "*.sst", "a table of the log"},
		{"MANIFEST", "", "the current MANIFEST"},
		{"marker", "marker.manifest.*", "the marker naming the current MANIFEST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			s := MustOpen(t, dir)
			defer s.Close()
			q := removedQueue(t, s, 1, "before")
			pebblestore.Flush(t, s)
			if err := s.Ping(t.Context()); err != nil {
				t.Fatalf("Ping before the removal: %v", err)
			}
			var gone string
			if tc.pattern == "" {
				gone = currentManifest(t, dir)
			} else {
				gone = logFile(t, dir, tc.pattern)
			}
			if err := os.Remove(gone); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for err := s.Ping(t.Context()); err == nil; err = s.Ping(t.Context()) {
				if time.Now().After(deadline) {
					t.Fatalf("Ping answers nil 30 s after %s was removed", gone)
				}
				time.Sleep(20 * time.Millisecond)
			}
			err := s.Ping(t.Context())
			if !strings.Contains(err.Error(), filepath.Base(gone)) && tc.name != "marker" || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Ping: %v, want it to name %s, %s", err, tc.says, gone)
			}
			wantRefused(t, s, q, "after")
			if _, err := s.QueueGet(t.Context(), q.Region, q.Account, q.Name); err != nil {
				t.Errorf("QueueGet once %s is removed: %v", gone, err)
			}
		})
	}
}

// currentManifest is the MANIFEST the marker in dir's log names.
func currentManifest(t *testing.T, dir string) string {
	t.Helper()
	marker := logFile(t, dir, "marker.manifest.*")
	parts := strings.SplitN(filepath.Base(marker), ".", 4)
	return filepath.Join(dir, pebblestore.LogDir, parts[3])
}

// The look at the log's files finds nothing wrong while Pebble flushes,
// compacts and starts new MANIFESTs, removing the files it no longer
// needs itself.
func TestLogFilesWatchQuietWhileCompacting(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	s, err := pebblestore.Open(t.Context(), dir, pebblestore.RotatingManifest(pebblestore.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := removedQueue(t, s, 1, "first")
	for start, i := time.Now(), 0; time.Since(start) < 3*time.Second && i < 2000; i++ {
		if err := removedSend(t, s, q, fmt.Sprint("m-", i)); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if i%20 == 0 {
			pebblestore.FlushAsync(s)
		}
		if i%100 == 0 {
			stop := pebblestore.CompactInBackground(s)
			stop()
		}
		if err := s.Ping(t.Context()); err != nil {
			t.Fatalf("Ping after send %d: %v", i, err)
		}
	}
}
