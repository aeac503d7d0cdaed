package pebblestore_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil/poll"
	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/baton-sqs/baton/store/storetest"
)

// waitStack polls the goroutine dump until one goroutine's stack holds
// every one of frames (bounded: 5 s).
func waitStack(t *testing.T, frames ...string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	poll.For(t, 5*time.Second, func() error {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			ok := true
			for _, f := range frames {
				ok = ok && strings.Contains(g, f)
			}
			if ok {
				return nil
			}
		}
		return fmt.Errorf("no goroutine reached %v", frames)
	})
}

// A message moved into a queue (a dead-letter move, a redrive task) is in
// the target's index at once but under its new key only once the move
// commits: a receive on the target in between must still return it (its
// payload pending under the new pos), not lease it and drop it as gone.
func TestReceiveAfterUncommittedMove(t *testing.T) {
	dir := t.TempDir()
	s := MustOpen(t, dir)
	t.Cleanup(func() { s.Close() })
	src := storetest.NewQueue(storetest.QueueID(1), "src")
	dst := storetest.NewQueue(storetest.QueueID(2), "dst")
	storetest.MustCreateQueue(t, s, src)
	storetest.MustCreateQueue(t, s, dst)
	storetest.MustSend(t, s, src.ID, storetest.NewMessage(1, base)) // committed

	release := make(chan struct{})
	held, _ := pebblestore.HoldCommits(s, release)
	var wg sync.WaitGroup
	wg.Go(func() {
		out, err := s.MessageMove(context.Background(), baton.MessageMoveParams{
			QueueID: src.ID, MessageID: storetest.MessageID(1), ToQueueID: dst.ID, Now: base, ReceiveCount: 0,
		})
		if err != nil || out.Result != baton.LeaseCurrent {
			t.Errorf("move: %+v, %v", out, err)
		}
	})
	<-held // the move's round waits to be written
	var got []*baton.Message
	wg.Go(func() {
		got = receive(t, s, dst.ID, at(time.Second), at(time.Second+lease), 10)
	})
	// The receive has read the payloads and waits for its commit.
	waitStack(t, "(*batch).wait", "(*Store).MessageReceive")
	close(release)
	wg.Wait()
	st := storetest.MustStats(t, s, dst.ID, at(time.Second))
	if len(got) != 1 {
		t.Errorf("receive on the target right after the move: got %v, want the moved message; stats now %+v (the lease was taken)", idsOf(got), st)
	}
}

// A purge whose caller stops waiting (its context ends) still commits, and
// its messages' records are gone from the log with it.
func TestCancelledPurgeCommits(t *testing.T) {
	dir := t.TempDir()
	s := MustOpen(t, dir)
	t.Cleanup(func() { s.Close() })
	q := storetest.NewQueue(storetest.QueueID(1), "orders")
	other := storetest.NewQueue(storetest.QueueID(2), "other")
	storetest.MustCreateQueue(t, s, q)
	storetest.MustCreateQueue(t, s, other)
	storetest.MustSend(t, s, q.ID, storetest.NewMessage(1, base), storetest.NewMessage(2, base), storetest.NewMessage(3, base))

	release := make(chan struct{})
	held, queued := pebblestore.HoldCommits(s, release)
	// Something else is being committed, so the purge waits behind it.
	var wg sync.WaitGroup
	wg.Go(func() { storetest.MustSend(t, s, other.ID, storetest.NewMessage(9, base)) })
	<-held
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- s.QueuePurge(ctx, baton.QueuePurgeParams{Region: q.Region, Account: q.Account, Name: q.Name, Now: at(time.Second)})
	}()
	poll.For(t, 5*time.Second, func() error {
		if queued() < 1 {
			return errors.New("the purge is not queued")
		}
		return nil
	})
	cancel() // the client went away
	if err := <-errc; err == nil {
		t.Fatal("purge returned nil")
	}
	close(release)
	wg.Wait()
	storetest.MustSend(t, s, other.ID, storetest.NewMessage(10, base)) // the purge is committed now
	if st := storetest.MustStats(t, s, q.ID, at(time.Minute)); st.Visible != 0 {
		t.Fatalf("purged queue still has %+v", st)
	}
	if n := pebblestore.Messages(t, s); n != 2 {
		t.Errorf("after the purge committed: %d message records, want the 2 live ones", n)
	}
}
