package consumer_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	_ "modernc.org/sqlite"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/consumer/consumertest"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// openSQLite opens a SQLite database in a temporary file with its
// idempotency table.
func openSQLite(tb testing.TB) *consumer.SQLStore {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(tb.TempDir(), "idem.db")+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	s, err := consumer.NewSQLStore(db, "")
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Migrate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	if err := s.Migrate(context.Background()); err != nil {
		tb.Fatalf("second Migrate: %v", err)
	}
	return s
}

// storeKinds is every IdempotencyStore, for the conformance tests.
var storeKinds = []struct {
	name string
	open func(tb testing.TB) idemStore
}{
	{"memory", func(testing.TB) idemStore { return consumer.NewMemoryStore() }},
	{"sqlite", func(tb testing.TB) idemStore { return openSQLite(tb) }},
}

type idemStore interface {
	consumer.IdempotencyStore
	Prune(ctx context.Context, now time.Time) (int64, error)
}

// The conformance table every store passes: a sequence of calls and what
// each must answer.
func TestIdempotencyStores(t *testing.T) {
	t.Parallel()
	t0 := consumertest.Epoch
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type step struct {
		op          string // claim, renew, complete, abandon
		owner       string
		now, until  int
		wantState   consumer.ClaimState
		wantFenced  bool
		wantOwnerIs string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"first claim wins", []step{
			{op: "claim", owner: "a", now: 0, until: 30, wantState: consumer.Claimed},
			{op: "claim", owner: "b", now: 1, until: 31, wantState: consumer.InProgress, wantOwnerIs: "a"},
		}},
		{"same owner claims again", []step{
			{op: "claim", owner: "a", now: 0, until: 30, wantState: consumer.Claimed},
			{op: "claim", owner: "a", now: 5, until: 35, wantState: consumer.Claimed},
		}},
		{"in-progress record expires with the lease", []step{
			{op: "claim", owner: "a", now: 0, until: 30, wantState: consumer.Claimed},
			{op: "claim", owner: "b", now: 30, until: 60, wantState: consumer.Claimed},
		}},
		{"renewal keeps it", []step{
			{op: "claim", owner: "a", now: 0, until: 30, wantState: consumer.Claimed},
			{op: "renew", owner: "a", now: 20, until: 50},
			{op: "claim", owner: "b", now: 40, until: 70, wantState: consumer.InProgress, wantOwnerIs: "a"},
		}},
		{"completed skips", []step{
			{op: "claim", owner: "a", now: 0, until: 30, wantState: consumer.Claimed},
			{op: "complete", owner: "a", now: 10, until: 3600},
			{op: "claim", owner: "b", now: 100, until: 130, wantState: consumer.Completed},
			{op: "claim", owner: "a", now: 100, until: 130, wantState: consumer.Completed},
		}},
		{"completed expires after its TTL", []step{
			{op: "claim", owner: "a", now: 0, until: 30, wantState: consumer.Claimed},
			{op: "complete", owner: "a", now: 10, until: 100},
			{op: "claim", owner: "b", now: 100, until: 130, wantState: consumer.Claimed},
		}},
		{"late completion is fenced", []step{
			{op: "claim", owner: "a", now: 0, until: 30, wantState: consumer.Claimed},
			{op: "claim", owner: "b", now: 31, until: 61, wantState: consumer.Claimed},
			{op: "complete", owner: "a", now: 40, until: 3600, wantFenced: true},
			{op: "renew", owner: "a", now: 40, until: 70, wantFenced: true},
			{op: "complete", owner: "b", now: 50, until: 3600},
			{op: "claim", owner: "c", now: 60, until: 90, wantState: consumer.Completed},
		}},
		{"completion after own record expired, unclaimed", []step{
			{op: "claim", owner: "a", now: 0, until: 30, wantState: consumer.Claimed},
			{op: "complete", owner: "a", now: 45, until: 3600},
			{op: "claim", owner: "b", now: 50, until: 80, wantState: consumer.Completed},
		}},
		{"abandon frees the key", []step{
			{op: "claim", owner: "a", now: 0, until: 30, wantState: consumer.Claimed},
			{op: "abandon", owner: "a", now: 5},
			{op: "claim", owner: "b", now: 6, until: 36, wantState: consumer.Claimed},
		}},
		{"abandon leaves others alone", []step{
			{op: "claim", owner: "a", now: 0, until: 30, wantState: consumer.Claimed},
			{op: "abandon", owner: "b", now: 5},
			{op: "claim", owner: "c", now: 6, until: 36, wantState: consumer.InProgress, wantOwnerIs: "a"},
		}},
		{"renew of a missing record is fenced", []step{
			{op: "renew", owner: "a", now: 0, until: 30, wantFenced: true},
		}},
	}
	for _, kind := range storeKinds {
		for _, tt := range tests {
			t.Run(kind.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				s := kind.open(t)
				ctx := context.Background()
				for i, st := range tt.steps {
					var err error
					switch st.op {
					case "claim":
						var r consumer.ClaimResult
						r, err = s.Claim(ctx, consumer.ClaimParams{Key: "k", Owner: st.owner, Epoch: int64(i + 1), Now: at(st.now), Until: at(st.until)})
						if err == nil && r.State != st.wantState {
							t.Errorf("step %d claim by %s: state %d, want %d", i, st.owner, r.State, st.wantState)
						}
						if err == nil && st.wantOwnerIs != "" && r.Owner != st.wantOwnerIs {
							t.Errorf("step %d claim by %s: owner %q, want %q", i, st.owner, r.Owner, st.wantOwnerIs)
						}
					case "renew":
						err = s.Renew(ctx, consumer.RenewParams{Key: "k", Owner: st.owner, Now: at(st.now), Until: at(st.until)})
					case "complete":
						err = s.Complete(ctx, consumer.CompleteParams{Key: "k", Owner: st.owner, Now: at(st.now), KeepUntil: at(st.until)})
					case "abandon":
						err = s.Abandon(ctx, consumer.AbandonParams{Key: "k", Owner: st.owner})
					}
					if st.wantFenced {
						if !errors.Is(err, consumer.ErrFenced) {
							t.Errorf("step %d %s by %s: %v, want ErrFenced", i, st.op, st.owner, err)
						}
					} else if err != nil {
						t.Errorf("step %d %s by %s: %v", i, st.op, st.owner, err)
					}
				}
			})
		}
	}
}

func TestIdempotencyPrune(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			s := kind.open(t)
			ctx := context.Background()
			t0 := consumertest.Epoch
			for i, until := range []int{10, 20, 30} {
				if _, err := s.Claim(ctx, consumer.ClaimParams{Key: fmt.Sprint(i), Owner: "a", Now: t0, Until: t0.Add(time.Duration(until) * time.Second)}); err != nil {
					t.Fatal(err)
				}
			}
			n, err := s.Prune(ctx, t0.Add(20*time.Second))
			if err != nil || n != 2 {
				t.Errorf("Prune = %d, %v; want 2", n, err)
			}
		})
	}
}

func TestSQLStoreTableName(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		ok   bool
	}{{"", true}, {"idem", true}, {"my_table2", true}, {"x; DROP TABLE y", false}, {"2bad", false}, {"a.b", false}} {
		_, err := consumer.NewSQLStore(nil, tt.name)
		if got := err == nil; got != tt.ok {
			t.Errorf("NewSQLStore(%q) error %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

// The middleware: a message whose work is done is not run again; a failed
// attempt abandons its claim so the retry runs; the claim is renewed with
// the lease.
func TestIdempotencyMiddleware(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			bubble(t, func(t *testing.T) {
				h := newHarness(t, "idem", nil)
				store := kind.open(t)
				id := h.sqs.Send(h.url, "x", "")
				// The delete of the first, successful attempt is lost: the
				// message comes back when its lease lapses.
				var dropDeletes atomic.Bool
				dropDeletes.Store(true)
				h.sqs.SetFaults(func(c consumertest.Call) consumertest.Fault {
					if c.Op == "DeleteMessageBatch" && dropDeletes.Load() {
						return consumertest.Fault{Err: errors.New("connection reset")}
					}
					return consumertest.Fault{}
				})
				var runs atomic.Int32
				h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
					runs.Add(1)
					return nil
				}), consumer.WithMiddleware(consumer.Idempotency(store)), consumer.WithVisibilityTimeout(30*time.Second))
				poll.For(t, 5*time.Second, func() error {
					if runs.Load() != 1 {
						return fmt.Errorf("runs %d", runs.Load())
					}
					return nil
				})
				h.advanceUntil(2*time.Minute, time.Second, func() error {
					if h.state(id).Receives < 2 {
						return fmt.Errorf("not redelivered")
					}
					return nil
				})
				dropDeletes.Store(false)
				h.advanceUntil(2*time.Minute, time.Second, func() error {
					if !h.state(id).Deleted {
						return fmt.Errorf("not deleted")
					}
					return nil
				})
				if n := runs.Load(); n != 1 {
					t.Errorf("handler runs %d, want 1", n)
				}
				if n := h.obs.Count(consumer.EventDuplicate); n < 1 {
					t.Errorf("duplicate events %d, want >= 1", n)
				}
			})
		})
	}
}

// The in-progress record follows the lease: renewed by the scheduler, so a
// second delivery (a duplicate of the same key) waits rather than running.
func TestIdempotencyInProgressFollowsLease(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "idem2", nil)
		store := consumer.NewMemoryStore()
		h.sqs.Send(h.url, "same body", "")
		h.sqs.Send(h.url, "same body", "")
		g := newGate()
		defer g.open()
		var runs atomic.Int32
		h.start(holdFirst(h.clock, g, &runs), consumer.WithMiddleware(consumer.Idempotency(store, consumer.WithKey(consumer.KeyByBodyHash))),
			consumer.WithVisibilityTimeout(30*time.Second), consumer.WithConcurrency(2))
		poll.For(t, 5*time.Second, func() error {
			if got := h.obs.Reasons(consumer.EventDeleted)[consumer.ReasonSnoozed]; got != 1 {
				return fmt.Errorf("snoozes %d, want 1", got)
			}
			return nil
		})
		// A minute later the first is still working; its record has been
		// renewed with its lease.
		h.advance(time.Minute, time.Second)
		ctx := context.Background()
		r, err := store.Claim(ctx, consumer.ClaimParams{Key: keyOf("same body"), Owner: "probe", Now: h.clock.Now(), Until: h.clock.Now().Add(time.Second)})
		if err != nil || r.State != consumer.InProgress || !r.Until.After(h.clock.Now()) {
			t.Errorf("probe claim: %+v, %v; want in progress past now", r, err)
		}
		if n := runs.Load(); n != 1 {
			t.Errorf("runs %d, want 1", n)
		}
	})
}

func holdFirst(clock *consumertest.Clock, g *gate, runs *atomic.Int32) consumer.Handler {
	return consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
		runs.Add(1)
		return holdUntil(clock, g, nil, nil).Handle(ctx, d)
	})
}

func keyOf(body string) string {
	k, _ := consumer.KeyByBodyHash(&consumer.Delivery{Message: msgWithBody(body)})
	return k
}

// A handler that gives its message back with Lease.Release and returns nil
// (a return value then ignored) has not done the work: the middleware
// abandons its claim instead of completing it, so the redelivery runs the
// handler again instead of being deleted as a duplicate.
func TestIdempotencyReleaseThenNilRunsAgain(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "idemrel", nil)
		id := h.sqs.Send(h.url, "x", "")
		var calls atomic.Int32
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			if calls.Add(1) == 1 {
				if err := d.Lease().Release(ctx, 2*time.Second); err != nil {
					t.Errorf("Release: %v", err)
				}
			}
			return nil
		}), consumer.WithMiddleware(consumer.Idempotency(consumer.NewMemoryStore())), consumer.WithVisibilityTimeout(30*time.Second))
		h.advanceUntil(time.Minute, time.Second, func() error {
			if !h.state(id).Deleted {
				return fmt.Errorf("not deleted")
			}
			return nil
		})
		if got := calls.Load(); got != 2 {
			t.Errorf("handler calls %d, want 2 (the released message runs again)", got)
		}
		if n := h.obs.Count(consumer.EventDuplicate); n != 0 {
			t.Errorf("duplicates %d, want 0", n)
		}
		if got := h.obs.Reasons(consumer.EventDeleted); got[consumer.ReasonDone] != 1 || got[consumer.ReasonDuplicate] != 0 {
			t.Errorf("deletes by reason %v, want one done", got)
		}
	})
}

// A handler that panics has failed: the middleware abandons its claim as for
// a returned error, so the retry runs after its backoff. A claim left in
// progress until the old lease's deadline would make the retry snooze
// (NotReady), which on a FIFO queue changes the visibility and spends one of
// the message's receives: with maxReceiveCount 2, the message would reach
// the dead-letter queue having run once.
func TestIdempotencyPanicAbandonsClaim(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "idempanic.fifo", map[string]string{
			"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:idempanic-dlq.fifo","maxReceiveCount":2}`})
		h.sqs.CreateQueue("idempanic-dlq.fifo", nil)
		id := h.sqs.Send(h.url, "x", "g")
		var calls atomic.Int32
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			if calls.Add(1) == 1 {
				panic("boom")
			}
			return nil
		}), consumer.WithMiddleware(consumer.Idempotency(consumer.NewMemoryStore())), consumer.WithVisibilityTimeout(30*time.Second))
		h.advanceUntil(2*time.Minute, time.Second, func() error {
			if !h.state(id).Deleted {
				return fmt.Errorf("not deleted")
			}
			return nil
		})
		if got := calls.Load(); got != 2 {
			t.Errorf("handler calls %d, want 2", got)
		}
		if got := h.state(id).Receives; got != 2 {
			t.Errorf("receives %d, want 2 (the retry ran on the second)", got)
		}
		if got := h.obs.Reasons(consumer.EventReleased)[consumer.ReasonNotReady]; got != 0 {
			t.Errorf("not-ready releases %d, want 0", got)
		}
	})
}

// dupReceiver returns the first message it receives twice in one answer,
// with two receipt handles, as a standard queue may.
type dupReceiver struct {
	*consumertest.SQS
	done atomic.Bool
}

func (r *dupReceiver) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, o ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := r.SQS.ReceiveMessage(ctx, in, o...)
	if err != nil || len(out.Messages) != 1 || r.done.Swap(true) {
		return out, err
	}
	id, h := "0", *out.Messages[0].ReceiptHandle
	if _, err := r.SQS.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: in.QueueUrl,
		Entries: []types.ChangeMessageVisibilityBatchRequestEntry{{Id: &id, ReceiptHandle: &h}}}); err != nil {
		return nil, err
	}
	again, err := r.SQS.ReceiveMessage(ctx, in, o...)
	if err != nil {
		return nil, err
	}
	out.Messages = append(out.Messages, again.Messages...)
	return out, nil
}

// A duplicate delivery (here in the same receive, as a standard queue may
// answer) of a message another attempt is working on is left to that
// attempt: snoozing it would re-send it and delete the original with the
// duplicate's receipt, and the working attempt would lose its lease at its
// next renewal.
func TestIdempotencyDuplicateInOneReceive(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "idemdup", nil)
		id := h.sqs.Send(h.url, "x", "")
		g := newGate()
		defer g.open()
		var runs atomic.Int32
		c, err := consumer.New(&dupReceiver{SQS: h.sqs}, h.url, holdFirst(h.clock, g, &runs), h.opts([]consumer.Option{
			consumer.WithMiddleware(consumer.Idempotency(consumer.NewMemoryStore())),
			consumer.WithVisibilityTimeout(30 * time.Second), consumer.WithConcurrency(2)})...)
		if err != nil {
			t.Fatal(err)
		}
		h.run(c)
		h.advance(time.Minute, time.Second)
		g.open()
		h.advanceUntil(time.Minute, time.Second, func() error {
			if !h.state(id).Deleted {
				return fmt.Errorf("not deleted")
			}
			return nil
		})
		if n := h.obs.Count(consumer.EventLeaseLost); n != 0 {
			t.Errorf("leases lost %d, want 0: %v", n, h.obs.All(consumer.EventLeaseLost))
		}
		if n := runs.Load(); n != 1 {
			t.Errorf("runs %d, want 1", n)
		}
	})
}
