package pebblestore

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// fullFlushFS fails each table a flush writes under dir while full is
// set, as a full disk does.
type fullFlushFS struct {
	vfs.FS
	dir  string
	full *atomic.Bool
}

func (fs fullFlushFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if c == "pebble-memtable-flush" && strings.HasPrefix(name, fs.dir) && fs.full.Load() {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOSPC}
	}
	return fs.FS.Create(name, c)
}

// A salvage whose new directory's disk is full fails a flush of the new
// log: it ends with the error (before, it never ended, Pebble trying the
// flush again at once and for ever, logging each failure: here, where
// the table's creation fails, 244,000 in 20 s). Not parallel: it sets the file system of every
// salvage.
func TestSalvageOntoFullDisk(t *testing.T) {
	from, to := t.TempDir(), t.TempDir()
	s, err := Open(t.Context(), from, Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := &baton.Queue{ID: 1, Region: "us-east-1", Account: "000000000000", Name: "q"}
	if err := s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: q}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	full := &atomic.Bool{}
	full.Store(true)
	salvageFS = fullFlushFS{FS: vfs.Default, dir: to, full: full}
	t.Cleanup(func() { salvageFS = vfs.Default })
	done := make(chan error, 1)
	go func() { _, err := Salvage(t.Context(), from, to); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), to) {
			t.Errorf("salvage onto a full disk: %v, want the error, naming %s", err, to)
		}
	case <-time.After(time.Minute):
		t.Fatal("salvage onto a full disk did not end")
	}
	// The disk has room again: the salvage left behind ends, and lets go
	// of the new log (Pebble's lock on it), rather than try the flush
	// again through the other tests.
	full.Store(false)
	poll.For(t, time.Minute, func() error {
		l, err := vfs.Default.Lock(filepath.Join(to, LogDir, "LOCK"))
		if err == nil {
			l.Close()
		}
		return err
	})
}
