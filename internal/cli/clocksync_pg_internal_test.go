package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/store/pgstore"
)

// skewed is this machine's clock set d off.
type skewed time.Duration

func (s skewed) Now() time.Time                       { return time.Now().Add(time.Duration(s)) }
func (s skewed) NewTimer(d time.Duration) clock.Timer { return clock.System{}.NewTimer(d) }

// TestClockSyncKeepsLeases: nodes on one database, the second's clock 25 s
// ahead. A 15-second lease taken on the first does not end early on the
// second once the second keeps time by the database's clock; on a node just
// as far ahead that does not, it does (the fault corrected).
func TestClockSyncKeepsLeases(t *testing.T) {
	t.Parallel()
	pg := pgtest.MustStart(t)
	url := pg.MustDatabase(t)
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	node := func(base clock.Clock, ahead time.Duration, correct bool) *engine.Engine {
		t.Helper()
		s, err := pgstore.Open(ctx, url, pgstore.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		key, err := s.ReceiptKey(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c := base
		if correct {
			offset := clock.NewOffset(base)
			sync := &clockSync{clock: offset, max: maxClockOffset, log: quiet,
				measure: func(ctx context.Context) (time.Duration, error) { return s.ClockOffset(ctx, base.Now) }}
			if err := sync.sync(ctx); err != nil {
				t.Fatal(err)
			}
			if off := offset.Get(); (off + ahead).Abs() > 2*time.Second {
				t.Fatalf("offset of a clock %v ahead measured as %v", ahead, off)
			}
			c = offset
		}
		e, err := engine.New(engine.Config{Store: s, Clock: c, ReceiptKey: key, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		return e
	}
	first := node(clock.System{}, 0, true)
	ahead := node(skewed(25*time.Second), 25*time.Second, true)
	uncorrected := node(skewed(25*time.Second), 25*time.Second, false)

	ref := engine.QueueRef{Account: "000000000000", Name: "leases"}
	if _, err := first.CreateQueue(ctx, engine.CreateQueueParams{Account: ref.Account, Name: ref.Name}); err != nil {
		t.Fatal(err)
	}
	if _, err := first.SendMessage(ctx, ref, engine.SendParams{Body: "work"}); err != nil {
		t.Fatal(err)
	}
	vis, max := 15, 10
	got, err := first.ReceiveMessage(ctx, ref, engine.ReceiveParams{VisibilityTimeout: &vis, MaxNumberOfMessages: &max})
	if err != nil || len(got) != 1 {
		t.Fatalf("receive on the first node: %d, %v", len(got), err)
	}
	if again, err := ahead.ReceiveMessage(ctx, ref, engine.ReceiveParams{MaxNumberOfMessages: &max}); err != nil || len(again) != 0 {
		t.Errorf("node 25 s ahead, corrected: received %d (%v) of a message leased for 15 s; want none", len(again), err)
	}
	if again, err := uncorrected.ReceiveMessage(ctx, ref, engine.ReceiveParams{MaxNumberOfMessages: &max}); err != nil || len(again) != 1 {
		t.Errorf("node 25 s ahead, uncorrected: received %d (%v); want the message, its lease ended early there", len(again), err)
	}
}

// A node whose database cannot be read at start does not start with an
// unknown clock offset: the reading waits for the database as the rest of
// the start does, and starts the node once it comes back, or fails the
// start at the connect timeout. It used to warn once and serve with its own
// clock, unchecked.
func TestStartEngineNeedsTheDatabaseClock(t *testing.T) {
	t.Parallel()
	pg := pgtest.MustStart(t)
	url := pg.MustDatabase(t)
	open := func(timeout time.Duration, log *slog.Logger) *pgstore.Store {
		t.Helper()
		s, err := pgstore.Open(context.Background(), url, pgstore.Options{Logger: log, ConnectTimeout: timeout, RetryFor: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	logs := &logbuf.Buffer{} // the patient node's
	log := slog.New(slog.NewTextHandler(logs, nil))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	patient, hasty := open(60*time.Second, log), open(2*time.Second, quiet)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // ends the clock syncs
	pg.Down()

	if _, err := startEngine(ctx, hasty, engine.Config{Store: hasty, Logger: quiet}); err == nil ||
		!strings.Contains(err.Error(), "clock offset to the database's is unknown") {
		t.Fatalf("start with the database down past the connect timeout: %v; want a refusal to start with an unknown clock offset", err)
	}

	started := make(chan error, 1)
	go func() {
		back, err := startEngine(ctx, patient, engine.Config{Store: patient, Logger: log})
		if err == nil {
			back.eng.Close()
		}
		started <- err
	}()
	testutil.CheckFor(t, 30*time.Second, func() error {
		if !strings.Contains(logs.String(), "could not read the database's clock, retrying") {
			return errors.New("no retry of the clock reading logged yet")
		}
		return nil
	})
	if err := pg.Up(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start once the database came back: %v\n%s", err, logs)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the node did not start within 60 s of the database coming back\n%s", logs)
	}
	if !strings.Contains(logs.String(), "clock set by the database's") {
		t.Errorf("the node started without setting its clock:\n%s", logs)
	}
}
