package pgstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// TestReadsShared: the calls that arrive while a read runs do not get its
// answer, which may predate them, but share the next read: one for all.
func TestReadsShared(t *testing.T) {
	t.Parallel()
	var r reads
	var runs atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	read := func(context.Context) (any, error) {
		n := runs.Add(1)
		started <- struct{}{}
		if n == 1 {
			<-release
		}
		return n, nil
	}
	ctx := context.Background()
	first := make(chan any, 1)
	go func() {
		v, _ := r.do(ctx, "k", read)
		first <- v
	}()
	<-started // the first read runs and waits
	const later = 10
	var wg sync.WaitGroup
	got := make([]any, later)
	for i := range later {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = r.do(ctx, "k", read)
		}()
	}
	// Wait until every later call has queued for the next read.
	poll.For(t, 30*time.Second, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.keys["k"].next == nil {
			return errors.New("no call has queued for the next read")
		}
		return nil
	})
	time.Sleep(50 * time.Millisecond) // let the rest queue too; more reads would still be correct
	close(release)
	wg.Wait()
	if v := <-first; v != int32(1) {
		t.Errorf("first call got read %v, want 1", v)
	}
	for i, v := range got {
		if v == int32(1) {
			t.Errorf("call %d, made while read 1 ran, got its answer", i)
		}
	}
	if n := runs.Load(); n < 2 || n > 1+later {
		t.Errorf("%d reads", n)
	} else if n > 3 {
		t.Logf("%d reads for %d later calls", n-1, later)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.keys) != 0 {
		t.Errorf("%d keys left", len(r.keys))
	}
}
