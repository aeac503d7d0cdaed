package pgstore

import (
	"time"
)

// Round pacing. Each server gathers its own rounds, so the servers sharing
// a database share its load among more, smaller rounds: with three servers
// about two and a half times as many commits for the same messages, each
// statement's fixed cost shared by fewer of them, and the commits queuing
// for the WAL's flush. A committer therefore holds a round that would be
// small while the server's other round is in flight: the ops it holds
// would wait for that round's flush anyway, and the requests answered when
// it commits come back to join them. It starts the round once the queue
// holds as many ops as the round in flight, or that round ends, or
// holdMax has passed (a round in flight on a database that hangs does not
// stall the next). A server whose committers have nothing in flight, a
// lone request above all, never waits.

// holdMax bounds how long a committer holds a small round.
const holdMax = 5 * time.Millisecond

// holdSmall reports whether a committer with queued ops queued should hold
// them: another round is in flight (inflight of them) and the last round
// taken held more.
func holdSmall(queued, inflight, last int) bool {
	return inflight > 0 && queued < last
}

// hold waits, with g.mu held, while holdSmall says so, for at most
// holdMax.
func (g *grouper) hold() {
	if g.closing || !holdSmall(len(g.queue), g.inflight, g.last) {
		return
	}
	g.holds.Add(1)
	t := g.clock.NewTimer(holdMax)
	expired, done := false, make(chan struct{})
	go func() {
		select {
		case <-t.C():
			g.mu.Lock()
			expired = true
			g.cond.Broadcast()
			g.mu.Unlock()
		case <-done:
		}
	}()
	for !expired && !g.closing && holdSmall(len(g.queue), g.inflight, g.last) {
		g.cond.Wait()
	}
	t.Stop()
	close(done)
}
