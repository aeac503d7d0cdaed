package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/baton-sqs/baton"
)

// A receive whose dead-letter move fails (the store refused or lost the
// move) has leased every message it found: those within maxReceiveCount,
// to deliver, and those past it, to move. Answering the client an error
// would leave them all leased to nobody, unknown to the lease ledger,
// hidden until the lease ends and counted as received once more; a long
// poll that tried again would count the deliverable ones again each time,
// until the server's failure had them moved to the dead-letter queue too.
// So the receive delivers the messages within their count, and gives back
// at once those it could not move, taking back the receive it counted (it
// delivered them to nobody): the next receive that leases one moves it, its
// count being past the maximum again, and the dead-letter queue holds it
// with the count of its deliveries, however many moves failed before. On
// a FIFO queue this keeps
// the order a consumer sees: a message bound for the dead-letter queue is
// never delivered, and its group stays locked while the later messages
// delivered are in flight. Only when nothing is left to deliver does the
// client get the error (a 503 for a store that is unavailable), and a
// long poll tries again.

// giveBackLogEvery is how often a queue's receives log each kind of line
// about a failed dead-letter move: while the store fails, every receive of
// the queue meets the failure, and one line a while, saying how many like
// it were held back, tells as much.
const giveBackLogEvery = 10 * time.Second

// afterFailedMove ends a receive's lease round whose dead-letter move of
// unmoved failed with err (leaseVisible): it gives unmoved back and returns
// kept to deliver, or err if kept is empty.
func (e *Engine) afterFailedMove(ctx context.Context, q *baton.Queue, kept, unmoved []*baton.Message, now time.Time, err error) ([]*baton.Message, bool, error) {
	e.giveBack(ctx, q, unmoved, now, err)
	if len(kept) == 0 {
		return nil, false, err
	}
	return kept, true, nil
}

// giveBack makes msgs, leased by a receive at now whose dead-letter move
// of them failed with moveErr, visible again, and takes back the receive
// each counted, and logs what became of them. It acts at the instant
// before the receive (giveBackBefore): a lease taken for no time
// (VisibilityTimeout 0) ends at now, so only then is every lease of the
// receive live, as the store's Unreceive requires, its own included; and
// once given back none is, so that a store that runs the change again (its
// first try's answer lost) takes back nothing more.
func (e *Engine) giveBack(ctx context.Context, q *baton.Queue, msgs []*baton.Message, now time.Time, moveErr error) {
	back := now.Add(-giveBackBefore)
	var entries []baton.VisibilityChange
	var ids []string
	var until time.Time // when the last lease would have ended
	for _, m := range msgs {
		entries = append(entries, baton.VisibilityChange{MessageID: m.ID, Epoch: m.Epoch, VisibleAt: back})
		ids = append(ids, m.ID)
		until = later(until, m.VisibleAt)
	}
	if len(entries) == 0 {
		return
	}
	if _, err := e.store.MessageChangeVisibilityBatch(ctx, baton.MessageChangeVisibilityBatchParams{
		QueueID: q.ID, Now: back, Entries: entries, Unreceive: true,
	}); err != nil {
		if !until.After(now) {
			e.logGiveBack(q, "dead-letter move failed and the receive could not take back the receive it counted of the messages it could not move: they are visible already (VisibilityTimeout 0), each with one receive more",
				"messages", ids, "err", moveErr, "give_back_err", err)
			return
		}
		e.logGiveBack(q, "dead-letter move failed and the receive could not give back the messages it could not move: they stay hidden until their lease ends",
			"messages", ids, "until", until, "err", moveErr, "give_back_err", err)
		return
	}
	e.logGiveBack(q, "dead-letter move failed; the receive gave back the messages it could not move, visible again now for the next receive to move",
		"messages", ids, "err", moveErr)
	e.notify(q.ID)
}

// giveBackBefore is how long before a receive giveBack acts: the finest
// time every store keeps (PostgreSQL's is the microsecond).
const giveBackBefore = time.Microsecond

// logGiveBack logs msg about queue q with args, unless a line alike was
// logged within giveBackLogEvery; the line says how many alike were held
// back since the last one, and so does a line of its own once the
// interval has passed with none written (lograte.Paced): the receives of
// a store that failed for a few seconds are not left uncounted.
func (e *Engine) logGiveBack(q *baton.Queue, msg string, args ...any) {
	e.giveBackLogs.Note(fmt.Sprint(q.ID, "\x00", msg), func(held int, since time.Time) {
		e.log.Warn(msg, append([]any{"queue", q.Name}, append(args, heldBack(held, since)...)...)...)
	}, func(held int, since time.Time) {
		e.log.Warn(msg, append([]any{"queue", q.Name}, heldBack(held, since)...)...)
	})
}

// heldBack are the attributes of a line of logGiveBack that counts the
// lines alike held back since the one before, written at since (none when
// held is 0).
func heldBack(held int, since time.Time) []any {
	if held == 0 {
		return []any{"same_lines_not_logged", 0}
	}
	return []any{"same_lines_not_logged", held, "since", since.UTC().Format(time.RFC3339)}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
