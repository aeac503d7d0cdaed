package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/memstore"
)

// sharedStore is a memstore handle whose wake-ups the test makes: it sends
// straight into the store, as another server would, and calls wake as that
// server's notification would.
type sharedStore struct {
	*memstore.Shared
	mu   sync.Mutex
	subs []func(uint64)
}

func (s *sharedStore) Subscribe(f func(queueID uint64)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs = append(s.subs, f)
}

func (s *sharedStore) wake(queueID uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.subs {
		f(queueID)
	}
}

// sendElsewhere stores a message as another server would: without this
// engine knowing.
func (s *sharedStore) sendElsewhere(t *testing.T, ref engine.QueueRef, now time.Time) uint64 {
	t.Helper()
	q, err := s.QueueGet(context.Background(), "us-east-1", ref.Account, ref.Name)
	if err != nil {
		t.Fatal(err)
	}
	m := &baton.Message{ID: "elsewhere", Body: "sent through another server", SenderID: ref.Account, SentAt: now, VisibleAt: now}
	if _, err := s.MessageSend(context.Background(), baton.MessageSendParams{QueueID: q.ID, Messages: []*baton.Message{m}}); err != nil {
		t.Fatal(err)
	}
	return q.ID
}

// startSharedLongPoll creates a queue on an engine over a sharedStore and
// starts a 20-second long poll on it, returning once the poll sleeps.
func startSharedLongPoll(t *testing.T) (*sharedStore, *clock.Fake, engine.QueueRef, <-chan []engine.ReceivedMessage) {
	t.Helper()
	store := &sharedStore{Shared: memstore.NewCluster().Open()}
	clock := clock.NewFake(testutil.Epoch)
	e, err := engine.New(engine.Config{Store: store, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	ref := engine.QueueRef{Account: "000000000000", Name: "shared"}
	if _, err := e.CreateQueue(context.Background(), engine.CreateQueueParams{Account: ref.Account, Name: ref.Name}); err != nil {
		t.Fatal(err)
	}
	got := make(chan []engine.ReceivedMessage, 1)
	go func() {
		wait := 20
		msgs, err := e.ReceiveMessage(context.Background(), ref, engine.ReceiveParams{WaitTimeSeconds: &wait})
		if err != nil {
			t.Error(err)
		}
		got <- msgs
	}()
	// On a shared store the poll sleeps a second at most, not its 20.
	testutil.CheckFor(t, 5*time.Second, func() error {
		if at, ok := clock.NextDeadline(); !ok || !at.Equal(testutil.Epoch.Add(time.Second)) {
			return fmt.Errorf("next timer at %v (pending %v), want %v", at, ok, testutil.Epoch.Add(time.Second))
		}
		return nil
	})
	return store, clock, ref, got
}

func mustReceiveElsewhere(t *testing.T, got <-chan []engine.ReceivedMessage) {
	t.Helper()
	select {
	case msgs := <-got:
		if len(msgs) != 1 || msgs[0].MessageID != "elsewhere" {
			t.Fatalf("long poll returned %+v, want the message sent elsewhere", msgs)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("long poll did not return")
	}
}

// TestNotifierWakesLongPoll: a store's report of a send made through another
// server answers a waiting long poll at once, with no clock movement.
func TestNotifierWakesLongPoll(t *testing.T) {
	t.Parallel()
	store, _, ref, got := startSharedLongPoll(t)
	store.wake(store.sendElsewhere(t, ref, testutil.Epoch))
	mustReceiveElsewhere(t, got)
}

// TestNotifierLostWakeUp: when the report is lost the long poll still finds
// the message, a second later.
func TestNotifierLostWakeUp(t *testing.T) {
	t.Parallel()
	store, clock, ref, got := startSharedLongPoll(t)
	store.sendElsewhere(t, ref, testutil.Epoch)
	select {
	case msgs := <-got:
		t.Fatalf("long poll returned %+v before its bounded sleep ended", msgs)
	default:
	}
	clock.Advance(time.Second)
	mustReceiveElsewhere(t, got)
}
