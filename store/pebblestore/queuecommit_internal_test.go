package pebblestore

import (
	"errors"
	"testing"

	"github.com/baton-sqs/baton/engine"
)

// errInjected is the error of the commits failCommits fails.
var errInjected = errors.New("injected commit failure")

// failCommits makes every commit fail, as a log that cannot be written
// would, until the returned function is called.
func failCommits(s *Store) (restore func()) {
	hook := func() error { return errInjected }
	s.w.beforeCommit.Store(&hook)
	return func() { s.w.beforeCommit.Store(nil) }
}

// A CreateQueue whose commit failed leaves the queue in memory while the
// store retries the write; the client's retry finds it there. It must not
// be acknowledged before the queue is in the log: refused while commits
// fail, and durable once acknowledged.
func TestCreateQueueRetryNotAckedUncommitted(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(t.Context(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	e, err := engine.New(engine.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	restore := failCommits(s)
	name := "orders"
	if _, err := e.CreateQueue(t.Context(), engine.CreateQueueParams{Account: "000000000000", Name: name}); err == nil {
		t.Fatal("create with failing commits: no error")
	}
	for i := range 3 {
		if _, err := e.CreateQueue(t.Context(), engine.CreateQueueParams{Account: "000000000000", Name: name}); err == nil {
			t.Fatalf("retry %d of the create acknowledged while commits fail", i)
		}
	}
	restore()
	if _, err := e.CreateQueue(t.Context(), engine.CreateQueueParams{Account: "000000000000", Name: name}); err != nil {
		t.Fatalf("retry once commits succeed: %v", err)
	}
	e.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(t.Context(), dir, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.QueueGet(t.Context(), "us-east-1", "000000000000", name); err != nil {
		t.Errorf("the acknowledged queue after reopen: %v", err)
	}
}
