package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/sdkhttp"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/skipnote"
)

// The crash test drives `baton serve` (the durable store, by default; with
// each --durability) with concurrent senders, receivers and deleters, kills
// it with SIGKILL at a random moment, restarts it on the same data directory
// and goes on, round after round; then it drains the queue. A ledger of what the server
// acknowledged, kept on the client side, must hold:
//
//   - every acknowledged send is received (or was deleted, which needs a
//     receive first), with the body it was sent with;
//   - no acknowledged delete comes back: no receive that began after the
//     delete was acknowledged returns the message;
//   - no message is handed out again before the end of a lease whose
//     receive was acknowledged: a receive with a higher receive count
//     answers no earlier than that receive's start plus the visibility
//     timeout (nothing here shortens a lease);
//   - receive counts never go backwards: a receive that began after another
//     was acknowledged reports a higher count;
//   - a lease an acknowledged visibility change extended (some receipts are,
//     in batches, before they are deleted) is not handed out again before
//     the extension's end;
//   - queues created and deleted meanwhile, one message each: after the
//     next restart an acknowledged creation with no deletion tried is
//     there, and an acknowledged deletion is not.
//
// Requests cut off by the kill have unknown outcomes; the ledger holds only
// acknowledged ones. Receipt handles not deleted before a kill are deleted
// after the restart, which needs the receipt key to have survived.

const (
	crashQueue = "crash"
	// crashVisibility is the queue's visibility timeout in seconds: leases
	// taken before a kill hold after the restart, for at most this long.
	crashVisibility = 2
)

func TestCrashRecovery(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		durability string
		rounds     int
	}{
		{"full", 20},
		// Safe against the process's crash, which is all a kill is.
		{"relaxed", 10},
	} {
		t.Run(c.durability, func(t *testing.T) {
			t.Parallel()
			// The README's test command runs a few rounds; the long
			// suites (BATON_LONG_TESTS=1, as in CI) run them all.
			rounds := c.rounds
			if !skipnote.Long() || testing.Short() {
				rounds = 3
				t.Logf("%d rounds, not %d: %s=1 runs them all", rounds, c.rounds, skipnote.LongEnv)
			}
			// BATON_CRASH_ROUNDS sets the rounds of each durability, for a
			// longer run than CI's.
			if v := os.Getenv("BATON_CRASH_ROUNDS"); v != "" {
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 {
					t.Fatalf("BATON_CRASH_ROUNDS=%q: want a positive number of rounds", v)
				}
				rounds = n
			}
			testCrashRecovery(t, rounds, "--durability", c.durability)
		})
	}
}

// testCrashRecovery runs rounds of load and SIGKILL, then drains and checks
// the ledger. args are more serve flags.
func testCrashRecovery(t *testing.T, rounds int, args ...string) {
	dir := t.TempDir()
	args = append([]string{"--data-dir", dir, "--account-id", account}, args...)
	l := newCrashLedger()
	var leftover []heldReceipt
	for round := range rounds {
		p := startBatonArgs(t, args...)
		c := crashClient(p.URL)
		if round == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(crashQueue),
				Attributes: map[string]string{"VisibilityTimeout": strconv.Itoa(crashVisibility)}})
			cancel()
			if err != nil {
				t.Fatalf("create queue: %v", err)
			}
		}
		// Receipts held across the kill still delete: the receipt key
		// and the messages' leases survived.
		l.deleteHeld(t, c, p.queueURL(crashQueue), leftover)
		l.checkQueues(t, c)
		leftover = runLoad(t, c, p, l, round)
		if t.Failed() {
			return
		}
	}

	// The last restart: drain the queue.
	p := startBatonArgs(t, args...)
	c := crashClient(p.URL)
	url := p.queueURL(crashQueue)
	l.deleteHeld(t, c, url, leftover)
	l.checkQueues(t, c)
	drain(t, c, url, l)
	l.check(t)
}

// crashClient is an SQS client for url that never retries (an error is an
// unknown outcome) and gives up on a request after 10 seconds.
func crashClient(url string) *sqs.Client {
	return sqs.New(sqs.Options{
		BaseEndpoint:     aws.String(url),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDCRASH", "secret", ""),
		RetryMaxAttempts: 1,
		HTTPClient:       sdkhttp.Client(&http.Client{Timeout: 10 * time.Second}),
	})
}

// runLoad runs senders, receivers and deleters against p for a random
// moment, kills p with SIGKILL while they run, and returns the receipts
// they held undeleted.
func runLoad(t *testing.T, c *sqs.Client, p *batonProcess, l *crashLedger, round int) []heldReceipt {
	const (
		senders, receivers, deleters = 3, 3, 2
		// maxRequests bounds each worker's requests in a round.
		maxRequests = 2000
	)
	url := p.queueURL(crashQueue)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	handles := make(chan heldReceipt, 1000)
	var workers, deleting sync.WaitGroup
	for w := range senders {
		workers.Go(func() {
			for i := 0; i < maxRequests && ctx.Err() == nil; i++ {
				l.send(ctx, c, url, fmt.Sprintf("r%d-s%d-%d", round, w, i), 1+i%4)
			}
		})
	}
	for range receivers {
		workers.Go(func() {
			for i := 0; i < maxRequests && ctx.Err() == nil; i++ {
				got := l.receive(ctx, c, url, 0)
				// Some leases are extended first, in one batch.
				if rand.IntN(4) == 0 {
					l.extend(ctx, c, url, got)
				}
				for _, h := range got {
					// Most are deleted, some left to lapse.
					if rand.IntN(10) < 8 {
						select {
						case handles <- h:
						case <-ctx.Done():
						}
					}
				}
			}
		})
	}
	workers.Go(func() {
		for i := 0; i < maxRequests && ctx.Err() == nil; i++ {
			l.churnQueue(ctx, c, fmt.Sprintf("churn-r%d-%d", round, i))
		}
	})
	var mu sync.Mutex
	var held []heldReceipt
	for range deleters {
		deleting.Go(func() {
			for batch := range batches(handles) {
				if rest := l.delete(ctx, c, url, batch); len(rest) > 0 {
					mu.Lock()
					held = append(held, rest...)
					mu.Unlock()
				}
			}
		})
	}

	// Kill the server at a random moment of the load: after a random
	// number of acknowledged sends and deletes.
	target := l.acknowledged() + 20 + rand.IntN(800)
	testutil.CheckFor(t, 60*time.Second, func() error {
		if n := l.acknowledged(); n < target {
			return fmt.Errorf("round %d: %d sends and deletes acknowledged, waiting for %d", round, n, target)
		}
		return nil
	})
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("round %d: kill: %v", round, err)
	}
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("round %d: baton did not exit 10s after SIGKILL", round)
	}
	cancel()
	workers.Wait()
	close(handles)
	deleting.Wait()
	for h := range handles {
		held = append(held, h)
	}
	sends, receives, deletes := l.counts()
	t.Logf("round %d: killed; so far %d sends, %d receives, %d deletes acknowledged", round, sends, receives, deletes)
	return held
}

// batches groups receipts from in into batches of up to ten.
func batches(in <-chan heldReceipt) <-chan []heldReceipt {
	out := make(chan []heldReceipt)
	go func() {
		defer close(out)
		for h := range in {
			batch := []heldReceipt{h}
		more:
			for len(batch) < 10 {
				select {
				case h, ok := <-in:
					if !ok {
						break more
					}
					batch = append(batch, h)
				default:
					break more
				}
			}
			out <- batch
		}
	}()
	return out
}

// drain receives and deletes until every acknowledged send has been seen
// and the queue is empty, or the queue has stayed empty past the end of
// every lease taken before the last kill: check then names what is missing.
func drain(t *testing.T, c *sqs.Client, url string, l *crashLedger) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var emptySince time.Time
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got := l.receive(ctx, c, url, 1)
		if len(got) > 0 {
			if rest := l.delete(ctx, c, url, got); len(rest) > 0 {
				t.Errorf("drain: %d deletes failed", len(rest))
			}
			cancel()
			emptySince = time.Time{}
			continue
		}
		out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
		cancel()
		if err != nil {
			t.Fatalf("drain: queue attributes: %v", err)
		}
		left := 0
		for _, a := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
			n, _ := strconv.Atoi(out.Attributes[a])
			left += n
		}
		switch {
		case left > 0:
			emptySince = time.Time{}
		case l.allSeen():
			return
		case emptySince.IsZero():
			emptySince = time.Now()
		case time.Since(emptySince) > 2*crashVisibility*time.Second:
			return
		}
	}
	t.Errorf("drain: the queue did not empty within 60s")
}

// heldReceipt is a receipt handle a receiver got, for the receive that
// reported count.
type heldReceipt struct {
	id     string
	handle string
	count  int
}

// crashLedger records what the server acknowledged, with the client's
// times: a request's start and its answer's arrival.
type crashLedger struct {
	mu       sync.Mutex
	attempts map[string]string // body → the id it was acknowledged under, "" until then
	sent     map[string]string // acknowledged id → body
	received map[string][]receipt
	deleted  map[string]time.Time // id → when its delete was acknowledged
	// queues are the churned queues not checked after a restart yet;
	// queuesChecked counts those checked.
	queues        map[string]queueFate
	queuesChecked int
	errs          []string
	// born is when the ledger began: check compares the wall clock's
	// progress since then with the monotonic clock's (leaseSlack).
	born time.Time
}

// receipt is one acknowledged receive of a message. until is no later than
// the end of its lease: its start plus the visibility timeout, or the start
// of an acknowledged change that extended it plus the same.
type receipt struct {
	start, answered, until time.Time
	count                  int
}

// queueFate is what the server acknowledged of a churned queue.
type queueFate int

const (
	queueCreated  queueFate = iota // created, no deletion tried
	queueDeleting                  // deletion tried, outcome unknown
	queueDeleted                   // deletion acknowledged
)

func newCrashLedger() *crashLedger {
	return &crashLedger{
		attempts: make(map[string]string), sent: make(map[string]string),
		received: make(map[string][]receipt), deleted: make(map[string]time.Time),
		queues: make(map[string]queueFate), born: time.Now(),
	}
}

func (l *crashLedger) failf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) < 50 {
		l.errs = append(l.errs, fmt.Sprintf(format, args...))
	}
}

// acknowledged counts the sends and deletes acknowledged so far.
func (l *crashLedger) acknowledged() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sent) + len(l.deleted)
}

func (l *crashLedger) counts() (sends, receives, deletes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, rs := range l.received {
		receives += len(rs)
	}
	return len(l.sent), receives, len(l.deleted)
}

// send sends n messages named by prefix, one by one or as a batch.
func (l *crashLedger) send(ctx context.Context, c *sqs.Client, url, prefix string, n int) {
	bodies := make([]string, n)
	l.mu.Lock()
	for i := range bodies {
		bodies[i] = fmt.Sprintf("%s-%d %s", prefix, i, strings.Repeat("x", rand.IntN(512)))
		l.attempts[bodies[i]] = ""
	}
	l.mu.Unlock()
	ack := func(body, id string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.attempts[body] = id
		l.sent[id] = body
	}
	if n == 1 {
		out, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(bodies[0])})
		if err == nil {
			ack(bodies[0], *out.MessageId)
		}
		return
	}
	entries := make([]types.SendMessageBatchRequestEntry, n)
	for i, b := range bodies {
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(b)}
	}
	out, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil {
		return
	}
	for _, ok := range out.Successful {
		i, _ := strconv.Atoi(*ok.Id)
		ack(bodies[i], *ok.MessageId)
	}
	if len(out.Failed) > 0 {
		l.failf("send batch: %d entries failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
	}
}

// receive receives up to ten messages and checks each against the ledger.
func (l *crashLedger) receive(ctx context.Context, c *sqs.Client, url string, wait int32) []heldReceipt {
	start := time.Now()
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: wait,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
	})
	if err != nil {
		return nil
	}
	answered := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var held []heldReceipt
	for _, m := range out.Messages {
		id, body := *m.MessageId, aws.ToString(m.Body)
		count, _ := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
		if want, ok := l.sent[id]; ok && want != body {
			l.errorf("message %s: received body %.40q, sent %.40q", id, body, want)
		}
		if known, ok := l.attempts[body]; !ok {
			l.errorf("message %s: received a body nobody sent: %.40q", id, body)
		} else if known != "" && known != id {
			l.errorf("message %s: received the body acknowledged as message %s", id, known)
		} else if known == "" {
			// A send whose answer the kill cut off: it happened.
			l.attempts[body] = id
			l.sent[id] = body
		}
		if at, ok := l.deleted[id]; ok && start.After(at) {
			l.errorf("message %s: received again (count %d) by a receive begun %v after its delete was acknowledged",
				id, count, start.Sub(at).Round(time.Millisecond))
		}
		l.received[id] = append(l.received[id], receipt{start: start, answered: answered, count: count,
			until: start.Add(crashVisibility * time.Second)})
		held = append(held, heldReceipt{id: id, handle: *m.ReceiptHandle, count: count})
	}
	return held
}

// extend extends the leases of batch by the visibility timeout, in one
// request, and records the extensions acknowledged.
func (l *crashLedger) extend(ctx context.Context, c *sqs.Client, url string, batch []heldReceipt) {
	if len(batch) == 0 {
		return
	}
	entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(batch))
	for i, h := range batch {
		entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)),
			ReceiptHandle: aws.String(h.handle), VisibilityTimeout: crashVisibility}
	}
	start := time.Now()
	out, err := c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ok := range out.Successful {
		i, _ := strconv.Atoi(*ok.Id)
		h := batch[i]
		for j := range l.received[h.id] {
			if r := &l.received[h.id][j]; r.count == h.count {
				r.until = start.Add(crashVisibility * time.Second)
			}
		}
	}
	for _, f := range out.Failed {
		i, _ := strconv.Atoi(*f.Id)
		l.errorf("extend the lease of %s: %s: %s", batch[i].id, aws.ToString(f.Code), aws.ToString(f.Message))
	}
}

// churnQueue creates the queue name, sends it a message and deletes it,
// recording what the server acknowledged.
func (l *crashLedger) churnQueue(ctx context.Context, c *sqs.Client, name string) {
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		return
	}
	l.setQueue(name, queueCreated)
	c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: aws.String("churn")})
	l.setQueue(name, queueDeleting)
	if _, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}); err == nil {
		l.setQueue(name, queueDeleted)
	}
}

func (l *crashLedger) setQueue(name string, f queueFate) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queues[name] = f
}

// checkQueues checks, after a restart, the churned queues of the rounds
// before, and forgets them.
func (l *crashLedger) checkQueues(t *testing.T, c *sqs.Client) {
	t.Helper()
	l.mu.Lock()
	queues := l.queues
	l.queues = make(map[string]queueFate)
	l.mu.Unlock()
	for name, fate := range queues {
		if fate == queueDeleting {
			continue
		}
		l.mu.Lock()
		l.queuesChecked++
		l.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		cancel()
		var gone *types.QueueDoesNotExist
		switch {
		case fate == queueCreated && err != nil:
			l.failf("queue %s: creation acknowledged, after a restart: %v", name, err)
		case fate == queueDeleted && !errors.As(err, &gone):
			l.failf("queue %s: deletion acknowledged, after a restart: %v", name, err)
		}
	}
}

// errorf is failf for a caller that holds l.mu.
func (l *crashLedger) errorf(format string, args ...any) {
	if len(l.errs) < 50 {
		l.errs = append(l.errs, fmt.Sprintf(format, args...))
	}
}

// delete deletes a batch of receipts and returns those whose delete was not
// acknowledged.
func (l *crashLedger) delete(ctx context.Context, c *sqs.Client, url string, batch []heldReceipt) []heldReceipt {
	entries := make([]types.DeleteMessageBatchRequestEntry, len(batch))
	for i, h := range batch {
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h.handle)}
	}
	out, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil {
		return batch
	}
	answered := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ok := range out.Successful {
		i, _ := strconv.Atoi(*ok.Id)
		if _, done := l.deleted[batch[i].id]; !done {
			l.deleted[batch[i].id] = answered
		}
	}
	var rest []heldReceipt
	for _, f := range out.Failed {
		i, _ := strconv.Atoi(*f.Id)
		l.errorf("delete %s: %s: %s", batch[i].id, aws.ToString(f.Code), aws.ToString(f.Message))
		rest = append(rest, batch[i])
	}
	return rest
}

// deleteHeld deletes receipts kept from before a kill; each must delete.
func (l *crashLedger) deleteHeld(t *testing.T, c *sqs.Client, url string, held []heldReceipt) {
	t.Helper()
	var rest []heldReceipt
	for len(held) > 0 {
		n := min(len(held), 10)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		rest = append(rest, l.delete(ctx, c, url, held[:n])...)
		cancel()
		held = held[n:]
	}
	if len(rest) > 0 {
		t.Errorf("%d receipts from before the restart did not delete", len(rest))
	}
}

func (l *crashLedger) unseen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for id := range l.sent {
		if len(l.received[id]) == 0 {
			out = append(out, id)
		}
	}
	return out
}

func (l *crashLedger) allSeen() bool { return len(l.unseen()) == 0 }

// check reports every broken promise.
func (l *crashLedger) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	lease := crashVisibility * time.Second
	now := time.Now()
	slack := leaseSlack(now.Sub(l.born), now.Round(0).Sub(l.born.Round(0)), lease)
	for id, rs := range l.received {
		slices.SortFunc(rs, func(a, b receipt) int { return a.start.Compare(b.start) })
		for i, a := range rs {
			for _, b := range rs[i+1:] {
				// b began after a was answered: its count is higher.
				if b.start.After(a.answered) && b.count <= a.count {
					l.errorf("message %s: receive count went from %d to %d", id, a.count, b.count)
				}
			}
			for _, b := range rs {
				// A later lease (higher count) began only once a's ended.
				if b.count > a.count && b.answered.Before(a.until.Add(-slack)) {
					l.errorf("message %s: receive %d answered %v after receive %d began, within its lease of %v",
						id, b.count, b.answered.Sub(a.start).Round(time.Millisecond), a.count, a.until.Sub(a.start).Round(time.Millisecond))
				}
			}
		}
	}
	for id := range l.sent {
		if len(l.received[id]) == 0 {
			l.errorf("message %s: acknowledged send never received", id)
		}
	}
	sends, deletes := len(l.sent), len(l.deleted)
	extended := 0
	for _, rs := range l.received {
		for _, r := range rs {
			if r.until.After(r.start.Add(lease)) {
				extended++
			}
		}
	}
	for _, e := range l.errs {
		t.Error(e)
	}
	if sends == 0 || deletes == 0 || extended == 0 || l.queuesChecked == 0 {
		t.Errorf("the load did too little to check anything: %d sends, %d deletes, %d lease extensions acknowledged, %d churned queues checked",
			sends, deletes, extended, l.queuesChecked)
	}
	t.Logf("ledger: %d messages sent, %d deleted by acknowledged deletes, %d leases extended, %d churned queues checked after restarts",
		sends, deletes, extended, l.queuesChecked)
	if len(l.errs) > 0 {
		t.Error(errors.New("the ledger does not hold (see above)"))
	}
}

// leaseSlack is how much earlier than lease, by this process's monotonic
// clock, a server may end a lease without breaking it. The server keeps
// deadlines by the wall clock (they outlive its restarts); this checker
// times receives by the monotonic clock. When the wall clock runs fast —
// a slewing NTP, a virtual machine's clock being brought in line; 0.5%
// was seen on the development machine — a lease ends early by the
// monotonic measure in the same proportion. The slack is that proportion
// (wall against mono, the same span timed by each clock) of the lease,
// plus a millisecond, and never more than 2% of it: a server that ends
// leases earlier than its own clock says still fails.
func leaseSlack(mono, wall, lease time.Duration) time.Duration {
	if mono <= 0 || wall <= mono {
		return 0
	}
	slack := time.Duration(float64(lease)*float64(wall-mono)/float64(mono)) + time.Millisecond
	return min(slack, lease/50)
}

func TestLeaseSlack(t *testing.T) {
	t.Parallel()
	const lease = 2 * time.Second
	for _, tc := range []struct {
		mono, wall, want time.Duration
	}{
		{10 * time.Second, 10 * time.Second, 0},                           // clocks agree
		{10 * time.Second, 9 * time.Second, 0},                            // wall slow: leases end late, never early
		{2 * time.Second, 2010 * time.Millisecond, 11 * time.Millisecond}, // 0.5% fast, as seen
		{time.Second, 2 * time.Second, lease / 50},                        // capped at 2%
	} {
		if got := leaseSlack(tc.mono, tc.wall, lease); got != tc.want {
			t.Errorf("leaseSlack(%v, %v) = %v, want %v", tc.mono, tc.wall, got, tc.want)
		}
	}
}
