package sns

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// awaitUsers waits (up to 30 s of real time) until n publishes hold or
// await the group key.
func awaitUsers(t *testing.T, g *groupLocks, key string, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		g.mu.Lock()
		users := 0
		if l := g.held[key]; l != nil {
			users = l.users
		}
		g.mu.Unlock()
		if users == n {
			return
		}
	}
	t.Fatalf("the group never had %d publishes holding or awaiting it", n)
}

// recv is what a hold answered, waited for up to 30 s of real time.
func recv(t *testing.T, c <-chan held) held {
	t.Helper()
	select {
	case h := <-c:
		return h
	case <-time.After(30 * time.Second):
		t.Fatal("a hold never answered")
		return held{}
	}
}

type held struct {
	release func(context.Context, error)
	err     error
}

// TestGroupLocksFailThoseWaiting: publishes of one message group take its
// turn one at a time. One that fails (its store failing) fails those that
// waited for the group meanwhile, with its error, rather than leave each
// to wait out the store's retry bound after it; one that comes after the
// failure is given the turn; one whose client left fails nobody; one that
// succeeded hands the turn on; a waiter whose client leaves stops waiting;
// and a group no one holds is forgotten.
func TestGroupLocksFailThoseWaiting(t *testing.T) {
	var g groupLocks
	topic := &baton.Topic{Region: "us-east-1", Account: "000000000000", Name: "orders.fifo"}
	const key = "us-east-1\x00000000000000\x00orders.fifo\x00g"
	ctx := context.Background()
	// wait starts n holds of the group; the channel answers each as it
	// ends.
	wait := func(n int) <-chan held {
		c := make(chan held, n)
		for range n {
			go func() {
				r, err := g.hold(ctx, topic, "g")
				c <- held{r, err}
			}()
		}
		return c
	}

	first, err := g.hold(ctx, topic, "g")
	if err != nil {
		t.Fatal(err)
	}
	waiting := wait(2)
	awaitUsers(t, &g, key, 3)
	storeDown := fmt.Errorf("%w: writes refused", baton.ErrUnavailable)
	first(ctx, storeDown)
	for range 2 {
		if h := recv(t, waiting); !errors.Is(h.err, baton.ErrUnavailable) {
			t.Errorf("a publish that waited while the group's publish failed: %v, want that failure", h.err)
			if h.release != nil {
				h.release(ctx, nil)
			}
		}
	}

	after, err := g.hold(ctx, topic, "g")
	if err != nil {
		t.Fatalf("a publish after the failure: %v, want the turn", err)
	}
	next := wait(1)
	awaitUsers(t, &g, key, 2)
	left, cancel := context.WithCancel(ctx)
	cancel()
	after(left, context.Canceled) // its client left: nobody else fails
	h := recv(t, next)
	if h.err != nil {
		t.Fatalf("a publish after one whose client left: %v, want the turn", h.err)
	}
	last := wait(1)
	awaitUsers(t, &g, key, 2)
	h.release(ctx, nil)
	if h = recv(t, last); h.err != nil {
		t.Fatalf("a publish after one that succeeded: %v, want the turn", h.err)
	}

	gone, cancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() {
		_, err := g.hold(gone, topic, "g")
		stopped <- err
	}()
	awaitUsers(t, &g, key, 2)
	cancel()
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Errorf("a waiting publish whose client left: %v, want context.Canceled", err)
	}
	h.release(ctx, nil)
	g.mu.Lock()
	n := len(g.held)
	g.mu.Unlock()
	if n != 0 {
		t.Errorf("%d groups kept once no publish holds them, want none", n)
	}
}
