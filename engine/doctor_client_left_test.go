package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/memstore"
)

// hangUpOnLease is a store whose client hangs up while a receive leases
// messages: the long poll's client gives up just as a message arrives.
type hangUpOnLease struct {
	*memstore.Store
	mu     sync.Mutex
	hangUp context.CancelFunc
}

func (s *hangUpOnLease) set(f context.CancelFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hangUp = f
}

func (s *hangUpOnLease) MessageReceive(ctx context.Context, p baton.MessageReceiveParams) ([]*baton.Message, error) {
	msgs, err := s.Store.MessageReceive(ctx, p)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(msgs) > 0 && s.hangUp != nil {
		s.hangUp()
	}
	return msgs, err
}

// Long polls whose client leaves just as a message arrives: the lease is
// made (the store is not to be cut short), but the answer reaches no one.
// The client polls again, seen alive; the doctor must name the leases held
// by no one (client-left), not a handler failing.
func TestDoctorClientLeftLongPoll(t *testing.T) {
	t.Parallel()
	store := &hangUpOnLease{Store: memstore.New()}
	clk := clock.NewFake(testutil.Epoch)
	e, err := engine.New(engine.Config{Store: store, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	bg := context.Background()
	ref := mkQueue(t, e, "cut", map[string]string{"VisibilityTimeout": "30"})
	for range 5 { // leases that complete: the queue's handlers work
		if _, err := e.SendMessage(bg, ref, engine.SendParams{Body: "quick"}); err != nil {
			t.Fatal(err)
		}
		msgs, err := e.ReceiveMessage(as(sdkClient), ref, engine.ReceiveParams{})
		if err != nil || len(msgs) != 1 {
			t.Fatalf("receive: %d messages, %v", len(msgs), err)
		}
		clk.Advance(200 * time.Millisecond)
		if err := e.DeleteMessage(as(sdkClient), ref, msgs[0].ReceiptHandle); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		ctx, cancel := context.WithCancel(as(sdkClient))
		store.set(cancel)
		done := startPoll(ctx, e, ref, 20, engine.ReceiveParams{})
		waitTimers(t, clk, 1) // the poll waits
		if _, err := e.SendMessage(bg, ref, engine.SendParams{Body: "cut"}); err != nil {
			t.Fatal(err)
		}
		mustAnswer(t, done, "poll "+string(rune('1'+i)))
		store.set(nil)
		cancel()
		waitTimers(t, clk, 0)
		clk.Advance(time.Second)
	}
	clk.Advance(40 * time.Second) // every lease lapsed
	if msgs, err := e.ReceiveMessage(as(sdkClient), ref, engine.ReceiveParams{MaxNumberOfMessages: ptr(10)}); err != nil || len(msgs) != 3 {
		t.Fatalf("the client polls again: %d messages, %v; want the 3 back", len(msgs), err)
	}
	r, err := e.LeaseReport(bg, ref)
	if err != nil {
		t.Fatal(err)
	}
	if r.Diagnosis != ledger.DiagnosisClientLeft {
		t.Fatalf("diagnosis %s, findings %v; want client-left\n%s", r.Diagnosis, kinds(r), r.Advice)
	}
	lacks(t, r, ledger.DiagnosisHandlerFailing, ledger.DiagnosisHoldersStopped)
	contains(t, r.Advice, "3 leases handed out in answers to ReceiveMessage whose clients had left", "WaitTimeSeconds")
}

// goneAsItWakes is a store at whose receives, once armed, the client goes
// and another receiver wins the race for what was visible: the receive
// leases nothing, its client gone.
type goneAsItWakes struct {
	*memstore.Store
	mu     sync.Mutex
	hangUp context.CancelFunc
}

func (s *goneAsItWakes) MessageReceive(ctx context.Context, p baton.MessageReceiveParams) ([]*baton.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hangUp != nil {
		s.hangUp()
		return nil, nil
	}
	return s.Store.MessageReceive(ctx, p)
}

// A consumer that stops with a long poll waiting, after its leases lapsed:
// the poll's end, cut by its going, is no request of a consumer still
// there, so its lapses are a stopped holder's, not a failing handler's.
func TestDoctorClientLeftPollIsNoSignOfLife(t *testing.T) {
	t.Parallel()
	store := &goneAsItWakes{Store: memstore.New()}
	clk := clock.NewFake(testutil.Epoch)
	e, err := engine.New(engine.Config{Store: store, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	bg := context.Background()
	ref := mkQueue(t, e, "stopping", map[string]string{"VisibilityTimeout": "30"})
	for i := range 3 {
		if _, err := e.SendMessage(bg, ref, engine.SendParams{Body: "job"}); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			clk.Advance(time.Second)
		}
		if msgs, err := e.ReceiveMessage(as(sdkClient), ref, engine.ReceiveParams{}); err != nil || len(msgs) != 1 {
			t.Fatalf("receive: %d, %v", len(msgs), err)
		}
	}
	clk.Advance(20 * time.Second)
	ctx, cancel := context.WithCancel(as(sdkClient))
	defer cancel()
	done := startPoll(ctx, e, ref, 20, engine.ReceiveParams{}) // waits: nothing is visible
	waitTimers(t, clk, 1)
	store.mu.Lock()
	store.hangUp = cancel // the consumer stops as the poll wakes for the lapses
	store.mu.Unlock()
	clk.Advance(12 * time.Second) // the leases lapse at 30, 31 and 32 s
	if r := mustAnswer(t, done, "the stopping consumer's poll"); len(r.msgs) != 0 {
		t.Fatalf("the cut poll leased %d messages", len(r.msgs))
	}
	clk.Advance(time.Minute)
	r, err := e.LeaseReport(bg, ref)
	if err != nil {
		t.Fatal(err)
	}
	if r.Diagnosis != ledger.DiagnosisHoldersStopped {
		t.Errorf("diagnosis %s, findings %v; want holders-stopped\n%s", r.Diagnosis, kinds(r), r.Advice)
	}
}
