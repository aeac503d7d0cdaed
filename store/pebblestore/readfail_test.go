package pebblestore_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/baton-sqs/baton/store/storetest"
)

// failingReadFS fails every read of a table with EIO while armed, as a
// disk with a bad sector under it does.
type failingReadFS struct {
	vfs.FS
	armed *atomic.Bool
}

func (fs failingReadFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	return failingReadFile{File: f, name: name, armed: fs.armed}, nil
}

type failingReadFile struct {
	vfs.File
	name  string
	armed *atomic.Bool
}

func (f failingReadFile) ReadAt(p []byte, off int64) (int, error) {
	if f.armed.Load() {
		return 0, &os.PathError{Op: "read", Path: f.name, Err: syscall.EIO}
	}
	return f.File.ReadAt(p, off)
}

func (f failingReadFile) Read(p []byte) (int, error) {
	if f.armed.Load() {
		return 0, &os.PathError{Op: "read", Path: f.name, Err: syscall.EIO}
	}
	return f.File.Read(p)
}

// A disk that fails reads of a table (EIO): a receive that reads a body
// there is answered ErrUnavailable (503) and logged in one line, and
// works again once the disk does; a start that meets the error refuses,
// naming the disk and what to run.
func TestTableReadEIO(t *testing.T) {
	t.Parallel()
	mem := vfs.NewMem()
	var armed atomic.Bool
	fs := failingReadFS{FS: mem, armed: &armed}
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: fs, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	q := storetest.NewQueue(storetest.QueueID(1), "bodies")
	storetest.MustCreateQueue(t, s, q)
	for i := range 20 {
		m := storetest.NewMessage(i, base)
		m.Body = strings.Repeat(fmt.Sprint(i), 500)
		storetest.MustSend(t, s, q.ID, m)
	}
	pebblestore.Flush(t, s)
	armed.Store(true)
	rp := baton.MessageReceiveParams{QueueID: q.ID, Now: base, VisibleAt: at(time.Hour), Max: 1}
	if _, err := s.MessageReceive(t.Context(), rp); !errors.Is(err, baton.ErrUnavailable) || !strings.Contains(err.Error(), "input/output error") {
		t.Errorf("receive while the table cannot be read: %v, want ErrUnavailable naming the I/O error", err)
	}
	if !strings.Contains(logs.String(), "cannot read a message's body") || strings.Contains(logs.String(), "stack trace") {
		t.Errorf("the failed read is not logged in one line:\n%s", logs.String())
	}
	armed.Store(false)
	if got, err := s.MessageReceive(t.Context(), rp); err != nil || len(got) != 1 {
		t.Errorf("receive once the disk reads again: %d messages, %v", len(got), err)
	}
	mustClose(t, s)

	armed.Store(true)
	s, err = pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: fs, Logger: log})
	if err == nil {
		s.Close()
		t.Fatal("opened while its table cannot be read")
	}
	for _, want := range []string{"input/output error", ".sst", "baton store check"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("open while the table cannot be read: %v, want it to name %q", err, want)
		}
	}
}

// walReadFS fails every read of a write-ahead log with EIO while armed.
type walReadFS struct {
	vfs.FS
	armed *atomic.Bool
}

func (fs walReadFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".log") || !fs.armed.Load() {
		return f, err
	}
	return walReadFile{File: f, name: name}, nil
}

type walReadFile struct {
	vfs.File
	name string
}

func (f walReadFile) ReadAt(p []byte, off int64) (int, error) {
	return 0, &os.PathError{Op: "read", Path: f.name, Err: syscall.EIO}
}
func (f walReadFile) Read(p []byte) (int, error) {
	return 0, &os.PathError{Op: "read", Path: f.name, Err: syscall.EIO}
}

// A disk that fails the reads of the write-ahead log at a start (EIO):
// the start refuses, naming the I/O error, the file and what to do, and
// does not start without what the log holds.
func TestWALReadEIOAtStart(t *testing.T) {
	t.Parallel()
	mem := vfs.NewMem()
	var armed atomic.Bool
	fs := walReadFS{FS: mem, armed: &armed}
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	removedQueue(t, s, 1, "before")
	s.Close()
	armed.Store(true)
	s, err = pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: fs})
	if err == nil {
		s.Close()
		t.Fatal("opened while its write-ahead log cannot be read")
	}
	for _, want := range []string{"input/output error", ".log", "baton store check"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("open while the write-ahead log cannot be read: %v, want it to name %q", err, want)
		}
	}
}
