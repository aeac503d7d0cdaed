package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/pgtest"
)

// openStore opens a store on a database of its own.
func openStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), pgtest.MustDatabase(t), Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// inOneRound runs calls at once, each making one store call, while the
// committers are held until all of them have queued their ops, so that
// they are offered to one round. It returns how many rounds ran from the
// release until every call returned.
func inOneRound(t *testing.T, s *Store, calls ...func()) int64 {
	t.Helper()
	g := &s.group
	g.mu.Lock()
	g.held = true
	g.mu.Unlock()
	var wg sync.WaitGroup
	for _, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			call()
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		g.mu.Lock()
		n := len(g.queue)
		g.mu.Unlock()
		if n == len(calls) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d calls queued", n, len(calls))
		}
		time.Sleep(time.Millisecond)
	}
	before := g.rounds.Load()
	g.mu.Lock()
	g.held = false
	g.cond.Broadcast()
	g.mu.Unlock()
	wg.Wait()
	return g.rounds.Load() - before
}

// sendN sends n messages, one per call, and returns them.
func sendN(t *testing.T, s *Store, qid uint64, prefix string, n int, now time.Time) []*baton.Message {
	t.Helper()
	var msgs []*baton.Message
	for i := range n {
		m := testMessage(fmt.Sprintf("%s-%d", prefix, i), now)
		if _, err := s.MessageSend(context.Background(), baton.MessageSendParams{QueueID: qid, Messages: []*baton.Message{m}}); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// receiveAll leases every visible message of the queue and returns their
// epochs by id.
func receiveAll(t *testing.T, s *Store, qid uint64, now time.Time) map[string]uint32 {
	t.Helper()
	epochs := map[string]uint32{}
	for {
		got, err := s.MessageReceive(context.Background(), baton.MessageReceiveParams{QueueID: qid, Now: now, Max: 10,
			VisibleAt: now.Add(time.Hour), RetentionCutoff: now.Add(-time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			return epochs
		}
		for _, m := range got {
			epochs[m.ID] = m.Epoch
		}
	}
}

// TestGroupSharesRounds: concurrent sends, deletes and visibility changes
// are committed together, one round for all of them, and each is answered.
func TestGroupSharesRounds(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	qid := mustQueue(t, s, "shared-rounds", false)
	now := time.Now()
	sendN(t, s, qid, "old", 10, now)
	epochs := receiveAll(t, s, qid, now)

	const senders = 30
	var calls []func()
	errs := make(chan error, senders+len(epochs))
	for i := range senders {
		calls = append(calls, func() {
			_, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: qid, Messages: []*baton.Message{testMessage(fmt.Sprintf("new-%d", i), now)}})
			errs <- err
		})
	}
	for id, epoch := range epochs {
		calls = append(calls, func() {
			out, err := s.MessageDelete(ctx, baton.MessageDeleteParams{QueueID: qid, MessageID: id, Epoch: epoch, Now: now, RequireLive: true})
			if err == nil && out.Result != baton.LeaseCurrent {
				err = fmt.Errorf("delete of %s: result %v", id, out.Result)
			}
			errs <- err
		})
	}
	ops := s.group.ops.Load()
	if rounds := inOneRound(t, s, calls...); rounds != 1 {
		t.Errorf("%d calls took %d rounds, want 1", len(calls), rounds)
	}
	if n := s.group.ops.Load() - ops; n != int64(len(calls)) {
		t.Errorf("rounds held %d ops, want %d", n, len(calls))
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := countMessages(t, s, qid); n != senders {
		t.Errorf("%d messages stored, want %d", n, senders)
	}
}

// TestGroupAnswersEach: a round that mixes good and bad entries gives each
// caller its own answer: a stale receipt fails only its entry, a message
// deleted twice is gone the second time, a missing queue is not found, and
// the others take effect.
func TestGroupAnswersEach(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	qid := mustQueue(t, s, "mixed-rounds", false)
	gone := mustQueue(t, s, "gone-queue", false)
	if err := s.QueueDelete(ctx, "us-east-1", "000000000000", "gone-queue", time.Now()); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	sendN(t, s, qid, "m", 7, now)
	ep := receiveAll(t, s, qid, now)
	if len(ep) != 7 {
		t.Fatalf("received %d messages, want 7", len(ep))
	}
	later := now.Add(30 * time.Minute)

	type answer struct {
		outs []baton.LeaseOutcome
		err  error
	}
	var mu sync.Mutex
	answers := map[string]answer{}
	record := func(name string, outs []baton.LeaseOutcome, err error) {
		mu.Lock()
		defer mu.Unlock()
		if _, dup := answers[name]; dup {
			t.Errorf("%s answered twice", name)
		}
		answers[name] = answer{outs, err}
	}
	del := func(name string, q uint64, id string, epoch uint32) func() {
		return func() {
			out, err := s.MessageDelete(ctx, baton.MessageDeleteParams{QueueID: q, MessageID: id, Epoch: epoch, Now: now, RequireLive: true})
			record(name, []baton.LeaseOutcome{out}, err)
		}
	}
	change := func(name, id string, epoch uint32) func() {
		return func() {
			out, err := s.MessageChangeVisibility(ctx, baton.MessageChangeVisibilityParams{QueueID: qid, MessageID: id, Epoch: epoch,
				Now: now, VisibleAt: later})
			record(name, []baton.LeaseOutcome{out}, err)
		}
	}
	send := func(name string) func() {
		return func() {
			_, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: qid, Messages: []*baton.Message{testMessage(name, now)}})
			record(name, nil, err)
		}
	}
	rounds := inOneRound(t, s,
		del("live", qid, "m-0", ep["m-0"]),
		del("stale", qid, "m-1", ep["m-1"]-1),
		del("twice-a", qid, "m-2", ep["m-2"]),
		del("twice-b", qid, "m-2", ep["m-2"]),
		del("missing message", qid, "no-such", 1),
		del("missing queue", gone, "m-3", ep["m-3"]),
		change("change live", "m-3", ep["m-3"]),
		change("change stale", "m-4", ep["m-4"]-1),
		func() {
			outs, err := s.MessageDeleteBatch(ctx, baton.MessageDeleteBatchParams{QueueID: qid, Now: now, RequireLive: true,
				Entries: []baton.LeaseRef{{MessageID: "m-5", Epoch: ep["m-5"]}, {MessageID: "m-5", Epoch: ep["m-5"]},
					{MessageID: "m-6", Epoch: ep["m-6"] + 1}}})
			record("batch", outs, err)
		},
		send("sent-a"), send("sent-b"),
	)
	if rounds != 1 {
		t.Errorf("took %d rounds, want 1", rounds)
	}
	want := map[string][]baton.LeaseResult{
		"live": {baton.LeaseCurrent}, "stale": {baton.LeaseLapsed}, "missing message": {baton.LeaseGone},
		"change live": {baton.LeaseCurrent}, "change stale": {baton.LeaseLapsed},
		"batch":  {baton.LeaseCurrent, baton.LeaseGone, baton.LeaseLapsed},
		"sent-a": nil, "sent-b": nil,
	}
	for name, w := range want {
		a, ok := answers[name]
		switch {
		case !ok:
			t.Errorf("%s: no answer", name)
		case a.err != nil:
			t.Errorf("%s: %v", name, a.err)
		case len(a.outs) != len(w):
			t.Errorf("%s: %d outcomes, want %d", name, len(a.outs), len(w))
		default:
			for i := range w {
				if a.outs[i].Result != w[i] {
					t.Errorf("%s: outcome %d is %v, want %v", name, i, a.outs[i].Result, w[i])
				}
			}
		}
	}
	if a := answers["missing queue"]; !errors.Is(a.err, baton.ErrNotFound) {
		t.Errorf("delete in a deleted queue: %v, want ErrNotFound", a.err)
	}
	// One of the two deletes of m-2 found it live, the other gone.
	a, b := answers["twice-a"], answers["twice-b"]
	if a.err != nil || b.err != nil || a.outs[0].Result+b.outs[0].Result != baton.LeaseCurrent+baton.LeaseGone ||
		a.outs[0].Result != baton.LeaseCurrent && b.outs[0].Result != baton.LeaseCurrent {
		t.Errorf("two deletes of one receipt: %+v, %v and %+v, %v", a.outs, a.err, b.outs, b.err)
	}

	// What is left: m-1 (stale delete), m-3, m-4, m-6 (stale batch entry)
	// and the two sent.
	var left []string
	rows, err := s.pool.Query(ctx, `SELECT id, visible_at FROM baton_messages WHERE queue_id = $1 ORDER BY id`, int64(qid))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var vis time.Time
		if err := rows.Scan(&id, &vis); err != nil {
			t.Fatal(err)
		}
		left = append(left, id)
		if id == "m-3" && !vis.Equal(later.Truncate(time.Microsecond)) {
			t.Errorf("m-3 visible at %v, want %v", vis, later)
		}
		if id == "m-4" && !vis.Equal(now.Add(time.Hour).Truncate(time.Microsecond)) {
			t.Errorf("m-4 (stale change) visible at %v, want unchanged", vis)
		}
	}
	if fmt.Sprint(left) != "[m-1 m-3 m-4 m-6 sent-a sent-b]" {
		t.Errorf("left %v", left)
	}
}

// TestGroupSendToDeletedQueue: a round whose insert fails, because one of
// its sends is to a queue deleted meanwhile, fails no one: that send is
// not found and the others are stored, once.
func TestGroupSendToDeletedQueue(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	qid := mustQueue(t, s, "kept", false)
	doomed := mustQueue(t, s, "doomed", false)
	now := time.Now()
	sendN(t, s, doomed, "first", 1, now) // the store now knows it is not FIFO
	if err := s.QueueDelete(ctx, "us-east-1", "000000000000", "doomed", now); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, 6)
	var calls []func()
	for i := range errs {
		q := qid
		if i == 0 {
			q = doomed
		}
		calls = append(calls, func() {
			_, errs[i] = s.MessageSend(ctx, baton.MessageSendParams{QueueID: q, Messages: []*baton.Message{testMessage(fmt.Sprintf("s-%d", i), now)}})
		})
	}
	inOneRound(t, s, calls...)
	if !errors.Is(errs[0], baton.ErrNotFound) {
		t.Errorf("send to a deleted queue: %v, want ErrNotFound", errs[0])
	}
	for i, err := range errs[1:] {
		if err != nil {
			t.Errorf("send %d: %v", i+1, err)
		}
	}
	if n := countMessages(t, s, qid); n != 5 {
		t.Errorf("%d messages stored, want 5", n)
	}
}

// TestGroupRoundLostAnswer: a round whose commit's answer is lost is run
// again by each of its callers, and each is answered once, as it would be
// alone after a lost answer: the sends stored once, the delete finding its
// message gone, the visibility change made again.
func TestGroupRoundLostAnswer(t *testing.T) {
	t.Parallel()
	s, left := openFaulty(t, "round")
	ctx := context.Background()
	qid := mustQueue(t, s, "lost-round", false)
	now := time.Now()
	sendN(t, s, qid, "r", 2, now)
	ep := receiveAll(t, s, qid, now)
	var mu sync.Mutex
	answered := map[string]int{}
	results := map[string]baton.LeaseResult{}
	note := func(name string, r baton.LeaseResult, err error) {
		mu.Lock()
		defer mu.Unlock()
		answered[name]++
		results[name] = r
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	var calls []func()
	for i := range 5 {
		name := fmt.Sprintf("send-%d", i)
		calls = append(calls, func() {
			_, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: qid, Messages: []*baton.Message{testMessage(name, now)}})
			note(name, 0, err)
		})
	}
	calls = append(calls, func() {
		out, err := s.MessageDelete(ctx, baton.MessageDeleteParams{QueueID: qid, MessageID: "r-0", Epoch: ep["r-0"], Now: now, RequireLive: true})
		note("delete", out.Result, err)
	}, func() {
		out, err := s.MessageChangeVisibility(ctx, baton.MessageChangeVisibilityParams{QueueID: qid, MessageID: "r-1", Epoch: ep["r-1"],
			Now: now, VisibleAt: now.Add(time.Minute)})
		note("change", out.Result, err)
	})
	left.Store(1)
	if rounds := inOneRound(t, s, calls...); rounds < 2 {
		t.Errorf("%d rounds, want the lost one and more", rounds)
	}
	if left.Load() > 0 {
		t.Fatal("the fault was not injected")
	}
	if len(answered) != len(calls) {
		t.Errorf("%d of %d calls answered", len(answered), len(calls))
	}
	for name, n := range answered {
		if n != 1 {
			t.Errorf("%s answered %d times", name, n)
		}
	}
	if results["delete"] != baton.LeaseGone {
		t.Errorf("delete rerun: %v, want LeaseGone", results["delete"])
	}
	if results["change"] != baton.LeaseCurrent {
		t.Errorf("visibility change rerun: %v, want LeaseCurrent", results["change"])
	}
	if n := countMessages(t, s, qid); n != 6 {
		t.Errorf("%d messages stored, want 6 (5 sent, r-1 kept)", n)
	}
}
