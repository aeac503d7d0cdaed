package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/internal/testutil/poll"
	"github.com/baton-sqs/baton/store/memstore"
)

// movesFail is a memory store whose dead-letter moves fail while failMove
// is set, and whose visibility changes fail while failChange is, as a
// database store's do when it is unavailable.
type movesFail struct {
	*memstore.Store
	failMove, failChange atomic.Bool
}

var errStoreDown = fmt.Errorf("%w: the test's store is down", baton.ErrUnavailable)

func (s *movesFail) MessageMove(ctx context.Context, p baton.MessageMoveParams) (baton.LeaseOutcome, error) {
	if s.failMove.Load() {
		return baton.LeaseOutcome{}, errStoreDown
	}
	return s.Store.MessageMove(ctx, p)
}

func (s *movesFail) MessageChangeVisibilityBatch(ctx context.Context, p baton.MessageChangeVisibilityBatchParams) ([]baton.LeaseOutcome, error) {
	if s.failChange.Load() {
		return nil, errStoreDown
	}
	return s.Store.MessageChangeVisibilityBatch(ctx, p)
}

// redriveRig is an engine over a movesFail store with queue src, whose
// RedrivePolicy moves a message received more than once to dlq (FIFO
// queues both, if fifo).
type redriveRig struct {
	e          *engine.Engine
	store      *movesFail
	clock      *clock.Fake
	log        *logbuf.Buffer
	src, dlq   engine.QueueRef
	visibility *int
}

func newRedriveRig(t *testing.T, fifo bool) *redriveRig {
	t.Helper()
	r := &redriveRig{store: &movesFail{Store: memstore.New()}, clock: clock.NewFake(testutil.Epoch), log: &logbuf.Buffer{},
		visibility: ptr(30)}
	e, err := engine.New(engine.Config{Store: r.store, Clock: r.clock, Logger: slog.New(slog.NewTextHandler(r.log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	r.e = e
	src, dlq, attrs := "src", "dlq", map[string]string{}
	if fifo {
		src, dlq = "src.fifo", "dlq.fifo"
		attrs = map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}
	}
	r.dlq = mkQueue(t, e, dlq, attrs)
	attrs["RedrivePolicy"] = `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:` + dlq + `","maxReceiveCount":"1"}`
	r.src = mkQueue(t, e, src, attrs)
	return r
}

func (r *redriveRig) send(t *testing.T, body, group string) {
	t.Helper()
	if _, err := r.e.SendMessage(context.Background(), r.src, engine.SendParams{Body: body, GroupID: group}); err != nil {
		t.Fatal(err)
	}
}

// poisonPastCount sends "poison" and receives it once, and lets its 30 s
// lease lapse: its next receive must move it to the dead-letter queue.
func (r *redriveRig) poisonPastCount(t *testing.T) {
	t.Helper()
	r.send(t, "poison", "")
	r.mustReceive(t, r.src, 1, "poison")
	r.clock.Advance(31 * time.Second)
}

// receive receives up to max messages of ref, leased for 30 s, and returns
// their bodies.
func (r *redriveRig) receive(ref engine.QueueRef, max int) ([]string, error) {
	msgs, err := r.e.ReceiveMessage(context.Background(), ref, engine.ReceiveParams{MaxNumberOfMessages: ptr(max), VisibilityTimeout: r.visibility})
	var bodies []string
	for _, m := range msgs {
		bodies = append(bodies, m.Body)
	}
	return bodies, err
}

func (r *redriveRig) mustReceive(t *testing.T, ref engine.QueueRef, max int, want ...string) {
	t.Helper()
	got, err := r.receive(ref, max)
	if err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("receive of %s: %q, %v; want %q\n%s", ref.Name, got, err, want, r.log)
	}
}

// A receive whose dead-letter move fails still delivers the messages it
// may (it used to answer 503 and leave them leased to nobody, unknown to
// the lease ledger, until their lease ended), and gives back at once the
// one it could not move, which the next receive moves.
func TestReceiveDeliversPastFailedDeadLetterMove(t *testing.T) {
	t.Parallel()
	r := newRedriveRig(t, false)
	r.poisonPastCount(t)
	r.send(t, "good", "")

	r.store.failMove.Store(true)
	got, err := r.receive(r.src, 10)
	if err != nil || len(got) != 1 || got[0] != "good" {
		t.Fatalf("receive while dead-letter moves fail: %q, %v; want the good message\n%s", got, err, r.log)
	}
	if !strings.Contains(r.log.String(), "gave back the messages it could not move") {
		t.Errorf("no log line says the receive gave its messages back:\n%s", r.log)
	}
	rep, err := r.e.LeaseReport(context.Background(), r.src)
	if err != nil {
		t.Fatal(err)
	}
	if rep.SinceStart.Received != 2 {
		t.Errorf("the ledger saw %d receives, want 2 (the poison's first, the good one's)", rep.SinceStart.Received)
	}

	// The clock stands still: the poison message is visible again now.
	r.store.failMove.Store(false)
	r.mustReceive(t, r.src, 10)
	r.mustReceive(t, r.dlq, 10, "poison")
}

// When the message it could not move is all a receive found, the client
// gets the store's error, and the message is visible again at once.
func TestReceiveFailedDeadLetterMoveGivesBack(t *testing.T) {
	t.Parallel()
	r := newRedriveRig(t, false)
	r.poisonPastCount(t)

	r.store.failMove.Store(true)
	if got, err := r.receive(r.src, 10); !errors.Is(err, baton.ErrUnavailable) || len(got) != 0 {
		t.Fatalf("receive of the poison message while moves fail: %q, %v; want the store's unavailability", got, err)
	}
	r.store.failMove.Store(false)
	r.mustReceive(t, r.src, 10)
	r.mustReceive(t, r.dlq, 10, "poison")
}

// A give-back that fails too says in the log which messages stay hidden,
// and until when.
func TestReceiveFailedDeadLetterMoveGiveBackFails(t *testing.T) {
	t.Parallel()
	r := newRedriveRig(t, false)
	r.poisonPastCount(t)

	r.store.failMove.Store(true)
	r.store.failChange.Store(true)
	if _, err := r.receive(r.src, 10); !errors.Is(err, baton.ErrUnavailable) {
		t.Fatalf("receive: %v; want the store's unavailability", err)
	}
	if l := r.log.String(); !strings.Contains(l, "could not give back the messages it could not move: they stay hidden until their lease ends") ||
		!strings.Contains(l, "until="+testutil.Epoch.Add(61*time.Second).Format("2006-01-02T15:04:05.000Z07:00")) {
		t.Errorf("the log does not say which messages stay hidden until when:\n%s", l)
	}
	r.store.failMove.Store(false)
	r.store.failChange.Store(false)
	r.mustReceive(t, r.src, 10)
	r.clock.Advance(31 * time.Second)
	r.mustReceive(t, r.src, 10)
	r.mustReceive(t, r.dlq, 10, "poison")
}

// On a FIFO queue too the messages within their count are delivered: the
// one that could not be moved is bound for the dead-letter queue, never
// delivered, and its group stays locked while the later one is in flight;
// once that is deleted, the next receive moves it.
func TestReceiveFailedDeadLetterMoveFIFO(t *testing.T) {
	t.Parallel()
	r := newRedriveRig(t, true)
	r.send(t, "g1", "g")
	r.send(t, "g2", "g")
	r.send(t, "h1", "h")
	r.mustReceive(t, r.src, 1, "g1")
	r.clock.Advance(31 * time.Second)

	r.store.failMove.Store(true)
	ctx := context.Background()
	msgs, err := r.e.ReceiveMessage(ctx, r.src, engine.ReceiveParams{MaxNumberOfMessages: ptr(10), VisibilityTimeout: r.visibility})
	bodies := map[string]string{} // receipt handles by body
	for _, m := range msgs {
		bodies[m.Body] = m.ReceiptHandle
	}
	if err != nil || len(msgs) != 2 || bodies["g2"] == "" || bodies["h1"] == "" {
		t.Fatalf("receive while dead-letter moves fail: %v, %v; want g2 and h1\n%s", msgs, err, r.log)
	}
	r.store.failMove.Store(false)
	r.mustReceive(t, r.src, 10) // g1's group is in flight
	if err := r.e.DeleteMessage(ctx, r.src, bodies["g2"]); err != nil {
		t.Fatal(err)
	}
	r.mustReceive(t, r.src, 10)
	r.mustReceive(t, r.dlq, 10, "g1")
}

// While dead-letter moves keep failing, every receive of the queue meets
// the failure: the log says so once, then once every 10 s with how many
// lines alike it held back, not once per receive. The count is said once,
// by the line that ends the interval or by the next line alike, whichever
// comes first (lograte.Paced).
func TestReceiveFailedDeadLetterMoveLogsPaced(t *testing.T) {
	t.Parallel()
	r := newRedriveRig(t, false)
	r.poisonPastCount(t)

	r.store.failMove.Store(true)
	const line = "gave back the messages it could not move"
	for range 5 {
		if _, err := r.receive(r.src, 10); !errors.Is(err, baton.ErrUnavailable) {
			t.Fatalf("receive while moves fail: %v; want the store's unavailability", err)
		}
	}
	if n := strings.Count(r.log.String(), line); n != 1 {
		t.Fatalf("%d lines for 5 receives within a second, want 1:\n%s", n, r.log)
	}
	r.clock.Advance(10 * time.Second)
	if _, err := r.receive(r.src, 10); !errors.Is(err, baton.ErrUnavailable) {
		t.Fatalf("receive while moves fail: %v; want the store's unavailability", err)
	}
	poll.For(t, 30*time.Second, func() error {
		if l := r.log.String(); strings.Count(l, "same_lines_not_logged=4") != 1 || strings.Count(l, line) > 3 {
			return fmt.Errorf("10 s later: want one line saying 4 were held back, at most 3 in all:\n%s", l)
		}
		return nil
	})
}

// A receive whose dead-letter move failed delivered the message to nobody:
// giving it back takes that receive back, so that the dead-letter queue
// holds it with the count of its deliveries, as SQS's does (the first
// receive there of a message of maxReceiveCount 1 shows 2), however many
// moves failed before one succeeded. Each failed move used to count one
// receive more.
//
// So too for receives with VisibilityTimeout 0, whose leases end as they
// begin: they used to keep their counted receive, the message being
// visible already.
func TestFailedDeadLetterMovesCountNoReceive(t *testing.T) {
	t.Parallel()
	for _, vis := range []int{30, 0} {
		t.Run(fmt.Sprint("VisibilityTimeout=", vis), func(t *testing.T) {
			t.Parallel()
			r := newRedriveRig(t, false)
			r.poisonPastCount(t)

			r.store.failMove.Store(true)
			r.visibility = ptr(vis)
			for range 3 {
				if got, err := r.receive(r.src, 10); !errors.Is(err, baton.ErrUnavailable) || len(got) != 0 {
					t.Fatalf("receive of the poison message while moves fail: %q, %v; want the store's unavailability", got, err)
				}
			}
			r.visibility = ptr(30)
			r.store.failMove.Store(false)
			r.mustReceive(t, r.src, 10)
			msgs, err := r.e.ReceiveMessage(context.Background(), r.dlq, engine.ReceiveParams{
				MaxNumberOfMessages: ptr(10), VisibilityTimeout: r.visibility, AttributeNames: []string{"ApproximateReceiveCount"}})
			if err != nil || len(msgs) != 1 {
				t.Fatalf("receive of the dead-letter queue: %v, %v; want the poison message", msgs, err)
			}
			if got := msgs[0].Attributes["ApproximateReceiveCount"]; got != "2" {
				t.Errorf("first receive in the dead-letter queue: ApproximateReceiveCount %s, want 2 (its one delivery, and this receive)", got)
			}
		})
	}
}
