package pgstore

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
)

// Servers sharing a database tell each other of sends, releases and moves
// with NOTIFY, once the transaction that made the messages receivable has
// committed (see waker). Each store that has
// a subscriber keeps one connection of its own LISTENing, and reconnects it
// with backoff when it breaks; meanwhile notifications are lost, and the
// engine's bounded poll (baton.Notifier) finds the messages instead.
//
// The same connection LISTENs on queueChannel, which carries the changes
// to queues, for the rows this store keeps (queuecache.go); and on
// ledgerChannel, which carries the engines'
// lease-ledger batches (baton.LedgerBus) base64-encoded, since a NOTIFY
// payload is text. They are published outside any transaction, from the
// pool, and delivered to this store's subscribers too: an engine tells its
// own batches by the node id inside them. Once the connection LISTENs again
// after it was lost, the ledger's subscribers are told that
// batches published meanwhile may have been missed (baton.LedgerLinkLost),
// or, if no other server listens on the database, only that the link was
// down (baton.LedgerLinkLostAlone).

// wakeChannel is the NOTIFY channel. A payload is "<origin> <queue id>".
const wakeChannel = "baton_wake"

// ledgerChannel is the NOTIFY channel of lease-ledger batches.
const ledgerChannel = "baton_ledger"

// listenCheck is how long the listener waits for a notification before it
// pings its connection, so that a silently dead connection is replaced.
const listenCheck = 30 * time.Second

// notifier is a Store's listening side.
type notifier struct {
	store *Store
	cfg   *pgx.ConnConfig
	// clock is the store's (Options.Clock): how long the connection was
	// lost is by its time.
	clock clock.Clock

	mu         sync.Mutex
	subs       []func(uint64)
	ledgerSubs []func([]byte, baton.LedgerGap)
	cancel     context.CancelFunc // stops the listener; nil until it starts
	done       chan struct{}      // closed when the listener has stopped
	stopped    bool
	// listening is closed once the listener has first LISTENed.
	listening     chan struct{}
	listeningOnce sync.Once
	// pastListeners are the server processes of the listener's last
	// connections; run's alone.
	pastListeners []uint32
	// link is what the log has said of the listening connection.
	link linkLog
}

// linkLog is what the log has said of the listening connection's losses:
// a loss and its return are each one line, paced (Store.paced), so that a
// connection lost again and again (an idle_session_timeout, a flapping
// proxy) does not fill the log, and the attempts to make it again in
// between are counted, not logged.
type linkLog struct {
	mu       sync.Mutex
	down     time.Time // when it was lost; zero while it listens
	said     bool      // the loss was said: its return is said too
	failures int       // the attempts to make it again that failed since
}

// listenLostKey is the kind of the paced lines of the listening
// connection's losses.
const listenLostKey = "LISTEN connection lost"

// lostMsg is the line of the listening connection's loss.
const lostMsg = "PostgreSQL LISTEN connection lost; long polls fall back to polling, queues are read for each request, and other nodes' lease-ledger events are missed until it is back"

// maxPastListeners bounds notifier.pastListeners.
const maxPastListeners = 8

func (n *notifier) init(s *Store, cfg *pgx.ConnConfig, clk clock.Clock) {
	n.store, n.cfg, n.clock = s, cfg.Copy(), clk
	n.listening = make(chan struct{})
}

// Listening returns a channel closed once this store first listens for
// other servers' notifications (after the first subscriber starts its
// listener). What other servers notify before then is missed: a send's
// wake-up is found by the fallback poll, a lease-ledger event is lost.
// Tests wait on it before they let several servers talk.
func (s *Store) Listening() <-chan struct{} { return s.notify.listening }

// Subscribe calls f with a queue's id whenever another server notifies a
// send, release or move into it, until the store closes. The first
// subscriber starts the listening connection.
func (s *Store) Subscribe(f func(queueID uint64)) {
	n := &s.notify
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return
	}
	n.subs = append(n.subs, f)
	n.startLocked()
}

// PublishLedger notifies every store listening on the database, this one
// included, of lease-ledger batches: one NOTIFY each, all in one round trip.
func (s *Store) PublishLedger(ctx context.Context, batches [][]byte) error {
	b := &pgx.Batch{}
	for _, batch := range batches {
		payload := base64.StdEncoding.EncodeToString(batch)
		if len(payload) >= maxNotifyPayload {
			return fmt.Errorf("pgstore: lease-ledger batch of %d bytes is too large to notify", len(batch))
		}
		b.Queue(`SELECT pg_notify($1, $2)`, ledgerChannel, payload)
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("pgstore: publish lease-ledger batches: %w", err)
	}
	return nil
}

// maxNotifyPayload is PostgreSQL's bound on a NOTIFY payload (exclusive).
const maxNotifyPayload = 8000

// SubscribeLedger calls f with every lease-ledger batch published on the
// database, until the store closes. The first subscriber of either kind
// starts the listening connection.
func (s *Store) SubscribeLedger(f func(batch []byte, gap baton.LedgerGap)) {
	n := &s.notify
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return
	}
	n.ledgerSubs = append(n.ledgerSubs, f)
	n.startLocked()
}

// startLocked starts the listener unless it runs; n.mu is held.
func (n *notifier) startLocked() {
	if n.cancel == nil {
		ctx, cancel := context.WithCancel(context.Background())
		n.cancel, n.done = cancel, make(chan struct{})
		go n.run(ctx)
	}
}

// stop ends the listener, if it runs, and waits for it.
func (n *notifier) stop() {
	n.mu.Lock()
	n.stopped = true
	cancel, done := n.cancel, n.done
	n.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// run listens until ctx ends, reconnecting with backoff.
func (n *notifier) run(ctx context.Context) {
	defer close(n.done)
	backoff := 100 * time.Millisecond
	for {
		listened, err := n.listen(ctx)
		n.store.queues.listening(false)
		if ctx.Err() != nil {
			return
		}
		if listened {
			backoff = 100 * time.Millisecond
			n.deliverLedgerGap(baton.LedgerLinkDown)
		}
		n.lost(err, backoff)
		if !pause(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// listen connects, LISTENs and delivers notifications until the connection
// fails or ctx ends. listened reports whether it got as far as LISTEN.
func (n *notifier) listen(ctx context.Context) (listened bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, n.cfg.Copy())
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	// This store's listening connections cut before may linger on the
	// server (until it notices they are gone): they are not others.
	own := append(n.store.backends.pids(), n.pastListeners...)
	others, err := listenAndCount(ctx, conn, own)
	if err != nil {
		return false, err
	}
	if len(n.pastListeners) == maxPastListeners {
		n.pastListeners = n.pastListeners[1:]
	}
	n.pastListeners = append(n.pastListeners, conn.PgConn().PID())
	// Changes committed from now on are heard of; those before, by a row
	// kept before, are not: keep rows read from now on.
	n.store.queues.listening(true)
	n.back()
	first := false
	n.listeningOnce.Do(func() { close(n.listening); first = true })
	if !first {
		n.deliverLedgerLost(others)
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, listenCheck)
		note, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return true, ctx.Err()
		case timedOut(err):
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			// LISTENing again on a channel listened to changes nothing;
			// it keeps the statement others look for (listenAndCount).
			_, err = conn.Exec(pctx, "LISTEN "+ledgerChannel)
			cancel()
			if err != nil {
				return true, err
			}
			continue
		case err != nil:
			return true, err
		}
		switch note.Channel {
		case ledgerChannel:
			n.deliverLedger(note.Payload)
			continue
		case queueChannel:
			if origin, key, ok := parseQueueChange(note.Payload); ok && origin != n.store.origin {
				n.store.queues.drop(key)
			}
			continue
		}
		origin, id, ok := parseWake(note.Payload)
		if ok && origin != n.store.origin {
			n.deliver(id)
		}
	}
}

// lost logs that the listening connection was lost, or could not be made
// (err), and is tried again in retryIn; an attempt that fails while it is
// lost already is only counted, for the line that says it is back.
func (n *notifier) lost(err error, retryIn time.Duration) {
	l := &n.link
	l.mu.Lock()
	if !l.down.IsZero() {
		l.failures++
		l.mu.Unlock()
		return
	}
	l.down, l.said, l.failures = n.clock.Now(), false, 0
	l.mu.Unlock()
	n.store.paced.Note(listenLostKey, func(held int, since time.Time) {
		l.mu.Lock()
		l.said = true
		l.mu.Unlock()
		attrs := []any{"err", err, "retry_in", retryIn}
		if held > 0 {
			attrs = append(attrs, "more_lost_so", held, "since", since.UTC().Format(time.RFC3339))
		}
		n.store.log.Warn(lostMsg, attrs...)
	}, func(held int, since time.Time) {
		// The losses held back: the last may last still, and then its
		// return is said.
		l.mu.Lock()
		down := !l.down.IsZero()
		l.said = l.said || down
		l.mu.Unlock()
		n.store.log.Warn("PostgreSQL LISTEN connection lost again", "times", held, "since", since.UTC().Format(time.RFC3339), "lost_now", down)
	})
}

// back logs that the listening connection listens again, if its loss was
// said: how long long polls fell back to polling, and how many attempts
// to make it again failed meanwhile.
func (n *notifier) back() {
	l := &n.link
	l.mu.Lock()
	down, said, failures := l.down, l.said, l.failures
	l.down, l.said, l.failures = time.Time{}, false, 0
	l.mu.Unlock()
	if down.IsZero() || !said {
		return
	}
	n.store.log.Info("PostgreSQL LISTEN connection back: other nodes' wake-ups reach long polls again, and queues' rows are kept again",
		"polled_for", n.clock.Now().Sub(down).Round(time.Millisecond), "failed_attempts", failures)
}

func (n *notifier) deliver(queueID uint64) {
	n.mu.Lock()
	subs := n.subs
	n.mu.Unlock()
	for _, f := range subs {
		f(queueID)
	}
}

func (n *notifier) deliverLedger(payload string) {
	batch, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		n.store.log.Warn("dropped a malformed lease-ledger notification", "err", err)
		return
	}
	n.mu.Lock()
	subs := n.ledgerSubs
	n.mu.Unlock()
	for _, f := range subs {
		f(batch, baton.LedgerNoGap)
	}
}

// deliverLedgerLost tells the ledger's subscribers that batches may have
// been published while this store did not listen, or, if no other server
// listened on the database once it listened again, only that the link was
// down: what the ledger makes of that depends on whether it ever heard of
// another node (baton.LedgerGap).
func (n *notifier) deliverLedgerLost(others bool) {
	gap := baton.LedgerLinkLostAlone
	if others {
		gap = baton.LedgerLinkLost
	}
	n.deliverLedgerGap(gap)
}

// deliverLedgerGap tells the ledger's subscribers of gap: the link is down
// (baton.LedgerLinkDown, when the listening connection is lost), or was.
func (n *notifier) deliverLedgerGap(gap baton.LedgerGap) {
	n.mu.Lock()
	subs := n.ledgerSubs
	n.mu.Unlock()
	for _, f := range subs {
		f(nil, gap)
	}
}

// listenAndCount LISTENs on conn, and reports whether another session of
// the database, not one of this store's, may be another server's: one of
// this server's application_name (another server's pool keeps
// connections open even while its listener is down too, as after a
// database restart), or whose last statement is a listener's LISTEN
// (listen keeps it so), or pgx's ping, which a listener of an older
// version sent. It errs on the side of others: any other client's ping
// counts, and so do this store's own connections where a pooler hides
// their server processes.
func listenAndCount(ctx context.Context, conn *pgx.Conn, own []uint32) (others bool, err error) {
	mine := "0"
	for _, pid := range own {
		mine += "," + strconv.FormatUint(uint64(pid), 10)
	}
	// One simple-protocol exchange: the LISTENs come first, so a server
	// that starts listening after the count is heard from.
	results, err := conn.PgConn().Exec(ctx, "LISTEN "+wakeChannel+"; LISTEN "+ledgerChannel+"; LISTEN "+queueChannel+`;
		SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid NOT IN (`+mine+`)
			AND (application_name = current_setting('application_name')
				OR query LIKE 'LISTEN %`+ledgerChannel+`%' OR query = '-- ping'))`).ReadAll()
	if err != nil {
		return false, err
	}
	last := results[len(results)-1]
	if len(last.Rows) != 1 || len(last.Rows[0]) != 1 {
		return false, fmt.Errorf("pgstore: count of listeners: unexpected answer")
	}
	return string(last.Rows[0][0]) == "t", nil
}

func parseWake(payload string) (origin string, queueID uint64, ok bool) {
	origin, id, found := strings.Cut(payload, " ")
	if !found {
		return "", 0, false
	}
	queueID, err := strconv.ParseUint(id, 10, 64)
	return origin, queueID, err == nil
}

// backendSet is the server processes of a pool's open connections.
type backendSet struct{ m sync.Map }

// track makes the pool made with cfg note its connections' processes.
func (b *backendSet) track(cfg *pgxpool.Config) {
	after, before := cfg.AfterConnect, cfg.BeforeClose
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		if after != nil {
			if err := after(ctx, c); err != nil {
				return err
			}
		}
		b.m.Store(c.PgConn().PID(), struct{}{})
		return nil
	}
	cfg.BeforeClose = func(c *pgx.Conn) {
		b.m.Delete(c.PgConn().PID())
		if before != nil {
			before(c)
		}
	}
}

// pids returns the processes noted.
func (b *backendSet) pids() []uint32 {
	var out []uint32
	b.m.Range(func(k, _ any) bool {
		out = append(out, k.(uint32))
		return true
	})
	return out
}
