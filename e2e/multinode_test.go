package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/sdkhttp"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/skipnote"
)

// The multi-node test runs several `baton serve --store postgres://…`
// processes on one database of a throwaway PostgreSQL and drives them as
// one queue service, with senders and consumers on every node. The
// consumers log, on the client side, when each receive was asked and
// answered and when each delete was asked; from that log alone the test
// checks what the servers must jointly promise:
//
//   - no message is leased to two consumers at overlapping times. A lease
//     certainly covers the span from its receive's answer to the earlier of
//     its delete's request and its receive's request plus the visibility
//     timeout; two such spans of one message must not overlap;
//   - every acknowledged send is received, and the queue ends empty;
//   - every node reports the same counts;
//   - a receipt from one node deletes through another;
//   - a FIFO group hands out its messages in send order, and none while an
//     earlier one of the group is still held;
//   - a long poll on one node answers a send on another at once, not at the
//     engine's fallback poll a second later;
//   - a change to a queue through one node reaches the other promptly
//     (testMultiNodeQueueChanges).
//
// It runs three nodes, one of which is killed with SIGKILL halfway through
// draining the standard queue. Every loop is bounded in count and time.

// TestMultiNode is not parallel: it reports throughput and wake-up
// latency, which other tests running at the same time would distort.
func TestMultiNode(t *testing.T) {
	skipnote.SkipUnlessLong(t, "two nodes on one PostgreSQL under load")
	cluster := pgtest.MustStart(t)
	t.Run("Standard", func(t *testing.T) { testMultiNodeStandard(t, cluster) })
	t.Run("FIFO", func(t *testing.T) { testMultiNodeFIFO(t, cluster) })
	t.Run("LongPollWake", func(t *testing.T) { testMultiNodeWake(t, cluster) })
	t.Run("QueueChanges", func(t *testing.T) { testMultiNodeQueueChanges(t, cluster) })
}

// mnNode is one running server and a client for it.
type mnNode struct {
	*batonProcess
	client *sqs.Client
	killed atomic.Bool
}

// startMultiNodes starts n servers on a new database of cluster.
func startMultiNodes(t *testing.T, cluster *pgtest.Cluster, n int) []*mnNode {
	t.Helper()
	url := cluster.MustDatabase(t)
	nodes := make([]*mnNode, n)
	for i := range nodes {
		p := startBatonArgs(t, "--account-id", account, "--store", url)
		nodes[i] = &mnNode{batonProcess: p, client: mnClient(p.URL)}
	}
	return nodes
}

// mnClient is an SQS client that never retries (an error is an unknown
// outcome) and keeps enough idle connections for many workers.
func mnClient(url string) *sqs.Client {
	return keyClient(url, mnKeyID, &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 64},
	})
}

// mnKeyID is the access key mnClient signs with (secret "secret").
const mnKeyID = "AKIDMULTINODE"

// keyClient is an SQS client that signs with key (secret "secret") and
// never retries, sending through hc.
func keyClient(url, key string, hc *http.Client) *sqs.Client {
	return sqs.New(sqs.Options{
		BaseEndpoint:     aws.String(url),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider(key, "secret", ""),
		RetryMaxAttempts: 1,
		HTTPClient:       sdkhttp.Client(hc),
	})
}

// kill ends the node with SIGKILL and waits for it to exit.
func (n *mnNode) kill(t *testing.T) {
	t.Helper()
	n.killed.Store(true)
	n.cmd.Process.Kill()
	select {
	case <-n.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("baton (pid %d) still running 10s after SIGKILL", n.cmd.Process.Pid)
	}
}

// mnCreateQueue creates a queue through node n.
func mnCreateQueue(t *testing.T, n *mnNode, name string, attrs map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n.client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs}); err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
}

// counts returns a node's visible, in-flight and delayed counts of a queue.
func (n *mnNode) counts(t *testing.T, queue string) [3]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := n.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(n.queueURL(queue)), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("get attributes of %s from %s: %v", queue, n.URL, err)
	}
	return [3]string{out.Attributes["ApproximateNumberOfMessages"], out.Attributes["ApproximateNumberOfMessagesNotVisible"],
		out.Attributes["ApproximateNumberOfMessagesDelayed"]}
}

// mnWantCounts checks that every live node reports want for the queue.
func mnWantCounts(t *testing.T, nodes []*mnNode, queue string, want [3]string) {
	t.Helper()
	for i, n := range nodes {
		if n.killed.Load() {
			continue
		}
		if got := n.counts(t, queue); got != want {
			t.Errorf("node %d: visible, in flight, delayed = %v, want %v", i, got, want)
		}
	}
}

// mnLease is one receive of one message, as the consumer saw it.
type mnLease struct {
	consumer            int
	requested, answered time.Time
	// deleteAsked is when the delete that was acknowledged was asked; zero
	// if none was.
	deleteAsked time.Time
	call        int // the receive call, numbered across consumers
	handle      string
}

// mnLedger is the consumers' log.
type mnLedger struct {
	mu      sync.Mutex
	sent    map[string]string // message id -> body, for acknowledged sends
	leases  map[string][]*mnLease
	deleted map[string]bool
	calls   int
	errs    []string
	retried atomic.Int64 // sends sent again after a 503 (sendBatches)
}

// unavailableErr reports whether err is a 503 ServiceUnavailable.
func unavailableErr(err error) bool {
	status, code := errorStatus(err)
	return status == http.StatusServiceUnavailable && code == "ServiceUnavailable"
}

// newMNLedger returns an empty ledger that, should the test fail, logs the
// errors it recorded and the leases of the messages never deleted.
func newMNLedger(t *testing.T) *mnLedger {
	l := &mnLedger{sent: make(map[string]string), leases: make(map[string][]*mnLease), deleted: make(map[string]bool)}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, e := range l.errs {
			t.Log("ledger:", e)
		}
		n := 0
		for id := range l.sent {
			if l.deleted[id] {
				continue
			}
			if n++; n > 20 {
				break
			}
			var ls []string
			for _, le := range l.leases[id] {
				ls = append(ls, fmt.Sprintf("consumer %d asked %s answered %s", le.consumer,
					le.requested.Format(time.StampMicro), le.answered.Format(time.StampMicro)))
			}
			t.Logf("delete not acknowledged: %s (body %s), leases %v", id, l.sent[id], ls)
		}
	})
	return l
}

func (l *mnLedger) errorf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) < 30 {
		l.errs = append(l.errs, fmt.Sprintf(format, args...))
	}
}

// report fails the test with the ledger's recorded errors.
func (l *mnLedger) report(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.errs {
		t.Error(e)
	}
}

// sendBatches sends bodies through a node ten at a time (all in group, if
// set) and records the acknowledged ones; it returns the sequence numbers
// by body.
func (l *mnLedger) sendBatches(ctx context.Context, n *mnNode, queue, group string, bodies []string) map[string]string {
	seqs := make(map[string]string)
	for len(bodies) > 0 {
		batch := bodies[:min(10, len(bodies))]
		bodies = bodies[len(batch):]
		entries := make([]types.SendMessageBatchRequestEntry, len(batch))
		for i, b := range batch {
			entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(b)}
			if group != "" {
				entries[i].MessageGroupId, entries[i].MessageDeduplicationId = aws.String(group), aws.String(b)
			}
		}
		in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(n.queueURL(queue)), Entries: entries}
		out, err := n.client.SendMessageBatch(ctx, in)
		// A 503 says the database did not confirm the change within the
		// store's bound (a machine loaded far past its cores can take that
		// long): the send may or may not have been made. A FIFO batch is
		// sent again, as a client would, with the same deduplication ids,
		// which answer a send already made with its message ids and
		// sequence numbers; a standard one cannot be, and is an error.
		for tries := 1; err != nil && group != "" && tries < 5 && unavailableErr(err); tries++ {
			l.retried.Add(1)
			out, err = n.client.SendMessageBatch(ctx, in)
		}
		if err != nil {
			l.errorf("send through %s: %v", n.URL, err)
			return seqs
		}
		if len(out.Failed) > 0 {
			l.errorf("send through %s: %d entries failed: %s", n.URL, len(out.Failed), aws.ToString(out.Failed[0].Message))
		}
		l.mu.Lock()
		for _, ok := range out.Successful {
			i, _ := strconv.Atoi(*ok.Id)
			l.sent[*ok.MessageId] = batch[i]
			seqs[batch[i]] = aws.ToString(ok.SequenceNumber)
		}
		l.mu.Unlock()
	}
	return seqs
}

// consume receives from recv and deletes through del until stop closes, its
// node dies, or maxCalls receives; each answer is logged. Consumers ask for
// different numbers of messages (10, 9, …, 1, 10, …): receives that want
// different shares of a FIFO group are the ones that would expose a group
// handed to two receivers at once.
func (l *mnLedger) consume(ctx context.Context, consumer int, recv, del *mnNode, queue string, stop <-chan struct{}) {
	maxMessages := int32(10 - consumer%10)
	const maxCalls = 20000
	for range maxCalls {
		select {
		case <-stop:
			return
		default:
		}
		requested := time.Now()
		out, err := recv.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(recv.queueURL(queue)), MaxNumberOfMessages: maxMessages, WaitTimeSeconds: 1,
		})
		answered := time.Now()
		if err != nil {
			if !recv.killed.Load() && ctx.Err() == nil {
				l.errorf("consumer %d: receive: %v", consumer, err)
			}
			return
		}
		if len(out.Messages) == 0 {
			continue
		}
		l.mu.Lock()
		l.calls++
		call := l.calls
		held := make([]*mnLease, len(out.Messages))
		entries := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
		ids := make([]string, len(out.Messages))
		for i, m := range out.Messages {
			id := *m.MessageId
			if want, ok := l.sent[id]; !ok || want != aws.ToString(m.Body) {
				l.errs = append(l.errs, fmt.Sprintf("consumer %d: message %s: body %q, sent %q (acknowledged %v)", consumer, id, aws.ToString(m.Body), want, ok))
			}
			held[i] = &mnLease{consumer: consumer, requested: requested, answered: answered, call: call, handle: *m.ReceiptHandle}
			l.leases[id] = append(l.leases[id], held[i])
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
			ids[i] = id
		}
		l.mu.Unlock()

		asked := time.Now()
		dout, err := del.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(del.queueURL(queue)), Entries: entries})
		if err != nil {
			if !del.killed.Load() && ctx.Err() == nil {
				l.errorf("consumer %d: delete through %s: %v", consumer, del.URL, err)
			}
			return
		}
		l.mu.Lock()
		for _, ok := range dout.Successful {
			i, _ := strconv.Atoi(*ok.Id)
			held[i].deleteAsked = asked
			l.deleted[ids[i]] = true
		}
		for _, f := range dout.Failed {
			i, _ := strconv.Atoi(*f.Id)
			l.errs = append(l.errs, fmt.Sprintf("consumer %d: delete %s: %s", consumer, ids[i], aws.ToString(f.Message)))
		}
		l.mu.Unlock()
	}
	l.errorf("consumer %d: still receiving after %d calls", consumer, maxCalls)
}

// checkLeases checks that every acknowledged send was received and that no
// two leases of a message overlapped. It returns how many
// messages were received more than once.
func (l *mnLedger) checkLeases(t *testing.T, lease time.Duration) (redelivered int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	overlaps := 0
	for id := range l.sent {
		if len(l.leases[id]) == 0 {
			t.Errorf("message %s: acknowledged but never received", id)
		}
	}
	for id, ls := range l.leases {
		if len(ls) > 1 {
			redelivered++
		}
		sort.Slice(ls, func(i, j int) bool { return ls[i].answered.Before(ls[j].answered) })
		for i, a := range ls {
			end := a.requested.Add(lease)
			if !a.deleteAsked.IsZero() && a.deleteAsked.Before(end) {
				end = a.deleteAsked
			}
			for _, b := range ls[i+1:] {
				if b.answered.Before(end) {
					if overlaps++; overlaps <= 10 {
						t.Errorf("message %s: leased to consumer %d (answered %s) while consumer %d held it (answered %s, held at least until %s)",
							id, b.consumer, b.answered.Format(time.StampMicro), a.consumer, a.answered.Format(time.StampMicro), end.Format(time.StampMicro))
					}
				}
			}
		}
	}
	if overlaps > 0 {
		t.Errorf("%d overlapping leases in all", overlaps)
	}
	return redelivered
}

// awaitDrained polls until every acknowledged send has been received and
// the queue is empty, failing the test after timeout. (A message may be
// deleted without its delete being acknowledged, when the node is killed
// after the delete commits.) kill, if set, is called once when half the
// messages have been deleted.
func (l *mnLedger) awaitDrained(t *testing.T, nodes []*mnNode, queue string, timeout time.Duration, kill func()) {
	t.Helper()
	var lastCount time.Time
	testutil.CheckFor(t, timeout, func() error {
		l.mu.Lock()
		deleted, unseen := len(l.deleted), 0
		for id := range l.sent {
			if len(l.leases[id]) == 0 {
				unseen++
			}
		}
		l.mu.Unlock()
		if kill != nil && deleted >= len(l.sent)/2 {
			kill()
			kill = nil
		}
		if unseen > 0 {
			return fmt.Errorf("%d of %d acknowledged messages not yet received", unseen, len(l.sent))
		}
		if time.Since(lastCount) < 100*time.Millisecond {
			return errors.New("waiting to count the queue again")
		}
		lastCount = time.Now()
		for _, n := range nodes {
			if !n.killed.Load() {
				if c := n.counts(t, queue); c != [3]string{"0", "0", "0"} {
					return fmt.Errorf("visible, in flight, delayed = %v", c)
				}
				return nil
			}
		}
		return errors.New("no node left")
	})
}

// testMultiNodeStandard sends 20,000 messages through three nodes, checks
// that every node counts them, then drains them with consumers on every
// node (those on node 0 deleting through node 1: receipts work on any
// node), kills node 2 halfway, and checks the consumers' log.
func testMultiNodeStandard(t *testing.T, cluster *pgtest.Cluster) {
	const (
		messages          = 20000
		sendersPerNode    = 2
		consumersPerNode  = 4
		queue             = "multi"
		visibilityTimeout = 2
	)
	nodes := startMultiNodes(t, cluster, 3)
	mnCreateQueue(t, nodes[0], queue, map[string]string{"VisibilityTimeout": strconv.Itoa(visibilityTimeout)})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l := newMNLedger(t)

	// Send through every node at once.
	sendStart := time.Now()
	var wg sync.WaitGroup
	senders := len(nodes) * sendersPerNode
	for w := range senders {
		wg.Go(func() {
			var bodies []string
			for i := w; i < messages; i += senders {
				bodies = append(bodies, fmt.Sprintf("m%05d", i))
			}
			l.sendBatches(ctx, nodes[w%len(nodes)], queue, "", bodies)
		})
	}
	wg.Wait()
	sendTime := time.Since(sendStart)
	l.report(t)
	if len(l.sent) != messages {
		t.Fatalf("%d of %d sends acknowledged", len(l.sent), messages)
	}
	mnWantCounts(t, nodes, queue, [3]string{strconv.Itoa(messages), "0", "0"})

	// Drain through every node; kill node 2 halfway.
	stop := make(chan struct{})
	drainStart := time.Now()
	for i, n := range nodes {
		del := n
		if i == 0 {
			del = nodes[1]
		}
		for c := range consumersPerNode {
			wg.Go(func() { l.consume(ctx, i*consumersPerNode+c, n, del, queue, stop) })
		}
	}
	l.awaitDrained(t, nodes, queue, 3*time.Minute, func() { nodes[2].kill(t) })
	drainTime := time.Since(drainStart)
	close(stop)
	wg.Wait()
	l.report(t)

	redelivered := l.checkLeases(t, visibilityTimeout*time.Second)
	mnWantCounts(t, nodes, queue, [3]string{"0", "0", "0"})
	cut := 0 // receipts node 2's consumers held undeleted when it died
	for _, ls := range l.leases {
		for _, le := range ls {
			if le.consumer >= 2*consumersPerNode && le.deleteAsked.IsZero() {
				cut++
			}
		}
	}
	t.Logf("standard queue, 3 nodes: sent %d messages in %v (%.0f msg/s); received and deleted them in %v (%.0f msg/s) "+
		"with node 2 killed halfway, cutting %d receipts short; %d receive calls; %d messages received more than once",
		messages, sendTime.Round(time.Millisecond), float64(messages)/sendTime.Seconds(),
		drainTime.Round(time.Millisecond), float64(messages)/drainTime.Seconds(), cut, l.calls, redelivered)
}

// testMultiNodeFIFO sends a few thousand messages in 20 groups, each group
// through one node in order, and drains them with consumers on every node.
// Each group must come out in send order, one receive's share at a time.
func testMultiNodeFIFO(t *testing.T, cluster *pgtest.Cluster) {
	const (
		groups, perGroup  = 20, 150
		consumersPerNode  = 3
		queue             = "multi.fifo"
		visibilityTimeout = 10 // no lease lapses: every message is received once
	)
	nodes := startMultiNodes(t, cluster, 3)
	mnCreateQueue(t, nodes[0], queue, map[string]string{"FifoQueue": "true", "VisibilityTimeout": strconv.Itoa(visibilityTimeout)})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l := newMNLedger(t)

	sendStart := time.Now()
	var wg sync.WaitGroup
	for g := range groups {
		wg.Go(func() {
			bodies := make([]string, perGroup)
			for i := range bodies {
				bodies[i] = fmt.Sprintf("g%02d-%03d", g, i)
			}
			seqs := l.sendBatches(ctx, nodes[g%len(nodes)], queue, fmt.Sprintf("g%02d", g), bodies)
			for i := 1; i < len(bodies); i++ {
				a, b := seqs[bodies[i-1]], seqs[bodies[i]]
				if len(a) != len(b) || a >= b {
					l.errorf("group %d: message %d has sequence number %s, message %d %s: want increasing", g, i-1, a, i, b)
				}
			}
		})
	}
	wg.Wait()
	sendTime := time.Since(sendStart)
	if n := l.retried.Load(); n > 0 {
		t.Logf("%d batches sent again after a 503", n)
	}
	l.report(t)
	total := groups * perGroup
	if len(l.sent) != total {
		t.Fatalf("%d of %d sends acknowledged", len(l.sent), total)
	}
	mnWantCounts(t, nodes, queue, [3]string{strconv.Itoa(total), "0", "0"})

	stop := make(chan struct{})
	drainStart := time.Now()
	for i, n := range nodes {
		for c := range consumersPerNode {
			wg.Go(func() { l.consume(ctx, i*consumersPerNode+c, n, n, queue, stop) })
		}
	}
	l.awaitDrained(t, nodes, queue, 3*time.Minute, nil)
	drainTime := time.Since(drainStart)
	close(stop)
	wg.Wait()
	l.report(t)
	if redelivered := l.checkLeases(t, visibilityTimeout*time.Second); redelivered > 0 {
		t.Errorf("%d messages received more than once, want none (no lease lapsed)", redelivered)
	}

	// Send order within each group: message i+1 is handed out in the same
	// receive as message i, or after message i's delete was asked.
	l.mu.Lock()
	body := make(map[string]string, len(l.sent)) // message id by body
	for id, b := range l.sent {
		body[b] = id
	}
	violations := 0
	for g := range groups {
		for i := 1; i < perGroup; i++ {
			prev := l.leases[body[fmt.Sprintf("g%02d-%03d", g, i-1)]]
			cur := l.leases[body[fmt.Sprintf("g%02d-%03d", g, i)]]
			if len(prev) == 0 || len(cur) == 0 {
				continue // reported by checkLeases
			}
			p, c := prev[0], cur[0]
			switch {
			case p.call == c.call:
			case c.answered.Before(p.answered):
				violations++
				t.Errorf("group %d: message %d handed out before message %d", g, i, i-1)
			case p.deleteAsked.IsZero() || c.answered.Before(p.deleteAsked):
				violations++
				t.Errorf("group %d: message %d handed out (to consumer %d at %s) while message %d was still held (by consumer %d, delete asked at %s)",
					g, i, c.consumer, c.answered.Format(time.StampMicro), i-1, p.consumer, p.deleteAsked.Format(time.StampMicro))
			}
			if violations > 10 {
				l.mu.Unlock()
				t.FailNow()
			}
		}
	}
	calls := l.calls
	l.mu.Unlock()
	mnWantCounts(t, nodes, queue, [3]string{"0", "0", "0"})
	t.Logf("FIFO queue, 3 nodes, %d groups: sent %d messages in %v (%.0f msg/s); received and deleted them in %v (%.0f msg/s); %d receive calls",
		groups, total, sendTime.Round(time.Millisecond), float64(total)/sendTime.Seconds(),
		drainTime.Round(time.Millisecond), float64(total)/drainTime.Seconds(), calls)
}

// testMultiNodeWake waits in a long poll on node 0 and sends on node 1; the
// poll must answer well before the engine's one-second fallback poll.
func testMultiNodeWake(t *testing.T, cluster *pgtest.Cluster) {
	const (
		trials = 10
		// bound is well under the fallback poll (1 s): only a wake-up by
		// notification answers this fast.
		bound = 400 * time.Millisecond
	)
	nodes := startMultiNodes(t, cluster, 2)
	const queue = "wake"
	mnCreateQueue(t, nodes[0], queue, nil)
	waiter, sender := nodes[0], nodes[1]
	var latencies []time.Duration
	for trial := range trials {
		type result struct {
			out *sqs.ReceiveMessageOutput
			err error
			at  time.Time
		}
		got := make(chan result, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
			defer cancel()
			out, err := waiter.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(waiter.queueURL(queue)), WaitTimeSeconds: 20,
			})
			got <- result{out, err, time.Now()}
		}()
		// Requests to the waiting node, answered after the poll began,
		// give it time to go to sleep on its queue.
		for range 20 {
			waiter.counts(t, queue)
		}
		body := fmt.Sprintf("wake %d", trial)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := sender.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(sender.queueURL(queue)), MessageBody: aws.String(body)})
		cancel()
		sent := time.Now()
		if err != nil {
			t.Fatalf("send through node 1: %v", err)
		}
		var r result
		select {
		case r = <-got:
		case <-time.After(30 * time.Second):
			t.Fatal("long poll on node 0 did not return")
		}
		if r.err != nil {
			t.Fatalf("long poll on node 0: %v", r.err)
		}
		if len(r.out.Messages) != 1 || aws.ToString(r.out.Messages[0].Body) != body {
			t.Fatalf("long poll on node 0 returned %d messages, want %q", len(r.out.Messages), body)
		}
		latencies = append(latencies, max(r.at.Sub(sent), 0))
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		_, err = waiter.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(waiter.queueURL(queue)), ReceiptHandle: r.out.Messages[0].ReceiptHandle})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(latencies)
	t.Logf("long poll on node 0 woken by a send on node 1: median %v, max %v over %d trials (fallback poll: 1s)",
		latencies[len(latencies)/2].Round(time.Microsecond), latencies[len(latencies)-1].Round(time.Microsecond), trials)
	if worst := latencies[len(latencies)-1]; worst > bound {
		t.Errorf("slowest wake-up %v, want under %v", worst, bound)
	}
}
