package pgstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
)

// lockedBuf is a log a store writes while a test reads it.
type lockedBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A wake-up whose NOTIFY fails (the waker's connection cannot be made: a
// connect timeout on a loaded machine, a failover) is sent again once the
// database can be reached, and the log says what the failure costs and
// when it is over. It used to be dropped: the other servers' long polls on
// its queue waited for their next re-check.
func TestWakeUpSentAfterFailedNotify(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	logs := &lockedBuf{}
	a, err := Open(context.Background(), url, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err := Open(context.Background(), url, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	woke := make(chan uint64, 16)
	b.Subscribe(func(id uint64) { woke <- id })
	select {
	case <-b.Listening():
	case <-time.After(30 * time.Second):
		t.Fatal("the other store never listened")
	}

	// a's waker has made no connection yet (it makes it for its first
	// notification): make its connections fail until the test says.
	var failing atomic.Bool
	failing.Store(true)
	dial := a.wake.cfg.DialFunc
	a.wake.cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if failing.Load() {
			return nil, errors.New("the test refuses the connection")
		}
		return dial(ctx, network, addr)
	}
	const queue = 4242
	a.wake.add(queue)
	testutil.CheckFor(t, 30*time.Second, func() error {
		if !strings.Contains(logs.String(), "could not notify other servers of new messages") {
			return errors.New("no failed notification logged yet")
		}
		return nil
	})
	failing.Store(false)
	select {
	case id := <-woke:
		if id != queue {
			t.Errorf("woken for queue %d, want %d", id, queue)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the wake-up whose notification failed never reached the other store\n%s", logs)
	}
	testutil.CheckFor(t, 10*time.Second, func() error {
		if !strings.Contains(logs.String(), "notifying other servers of new messages again") {
			return errors.New("the recovery is not logged")
		}
		return nil
	})
	t.Logf("the log:\n%s", logs)
}
