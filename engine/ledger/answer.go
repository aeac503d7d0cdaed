package ledger

import (
	"context"
	"sync"
)

// An answer lost after its leases were recorded. A receive's leases are
// recorded before its answer is written; a client that leaves while the
// answer is on its way (its connection closed or cut, the write of the
// answer failing) never gets them, as one that had left before does. The
// rule is the one of Event.ClientLeft: the event that handed a lease out
// (a receive, or the change a replayed FIFO receive made) says its answer
// reached no client. Told after the fact, it is that event again, with
// ClientLeft set (Ledger.AnswerLost): the ledger takes the flag from it
// and nothing else (begin, changed), and a node of an earlier build reads
// the receive again as one applied already.

// Answer gathers the events that handed out leases in the answer of one
// request, while it is being served (WithAnswer). It is safe for
// concurrent use; a nil Answer gathers nothing.
type Answer struct {
	mu  sync.Mutex
	evs []Event
	// seen is the client's request seen once the answer goes out
	// (AnswerWent): a receive that leased nothing (See), or the receive
	// of evs (Event.Answering).
	seen Event
}

type answerKey struct{}

// WithAnswer returns ctx carrying a new Answer for the request it serves:
// the events that hand out leases in its answer are noted in it (Hand),
// for the ledger to be told should the answer reach no client.
func WithAnswer(ctx context.Context) (context.Context, *Answer) {
	a := &Answer{}
	return context.WithValue(ctx, answerKey{}, a), a
}

// AnswerOf returns the Answer ctx carries, nil if none.
func AnswerOf(ctx context.Context) *Answer {
	a, _ := ctx.Value(answerKey{}).(*Answer)
	return a
}

// Hand notes that ev, recorded, handed a lease out in the answer: a
// receive, or a Replay change. One already recorded with ClientLeft is
// held by no one already, and is not noted.
func (a *Answer) Hand(ev Event) {
	if a == nil || ev.ClientLeft {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.evs == nil {
		a.evs = make([]Event, 0, maxAnswerLeases)
	}
	a.evs = append(a.evs, ev)
	if ev.Answering && !ev.At.Before(a.seen.At) {
		a.seen = Event{Kind: KindSeen, QueueID: ev.QueueID, At: ev.At, Client: ev.Client}
	}
}

// See notes ev, a request of its client that leased nothing (KindSeen),
// to be recorded once the answer goes out (Ledger.AnswerWent).
func (a *Answer) See(ev Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen = ev
}

// maxAnswerLeases is how many leases one answer hands out at most: a
// ReceiveMessage's MaxNumberOfMessages is at most 10.
const maxAnswerLeases = 10

// Leases returns how many leases the answer hands out.
func (a *Answer) Leases() int {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.evs)
}

// AnswerLost tells the ledger that a's answer reached no client, after the
// leases it handed out were recorded as its client's: each is held by no
// one (Event.ClientLeft), and lapses as such. It returns how many leases
// that concerns; a second call tells nothing more.
func (l *Ledger) AnswerLost(a *Answer) int {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	evs := a.evs
	a.evs, a.seen = nil, Event{}
	a.mu.Unlock()
	for _, ev := range evs {
		ev.ClientLeft = true
		l.Record(ev)
	}
	return len(evs)
}

// AnswerWent tells the ledger that a's answer went out to its client (was
// written whole, its last bytes about to be sent): the client is seen, at
// its request (Event.Answering), as it was not while the answer could
// still be lost. A second call, or one after AnswerLost, tells nothing
// more. AnswerLost after it (the last bytes' flush failing: the connection
// known broken) still tells of the leases held by no one; the client
// stays seen.
func (l *Ledger) AnswerWent(a *Answer) {
	if a == nil {
		return
	}
	a.mu.Lock()
	ev := a.seen
	a.seen = Event{}
	a.mu.Unlock()
	if ev.Kind == KindSeen {
		l.Record(ev)
	}
}
