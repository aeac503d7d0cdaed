package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/skipnote"
)

// storeRetryBound is how long a node retries a failing database before it
// answers 503 (pgstore.DefaultRetryFor; `baton serve` has no flag for it).
const storeRetryBound = 5 * time.Second

// TestPostgresOutage stops the PostgreSQL under two `baton serve` nodes for
// longer than the nodes retry, then starts it again, and checks what a
// client sees, through aws-sdk-go-v2 with its retries off:
//
//   - every request during the outage that fails is answered HTTP 503
//     ServiceUnavailable, never 500 or anything else, and every node's
//     sends fail so (the 503 path is taken, not just allowed);
//   - /healthz answers 503 throughout and names the cause;
//   - a long poll waiting on each node when the database went away keeps
//     waiting and is answered by a send after the database is back;
//   - nothing acknowledged is lost: every acknowledged send is received,
//     no message whose delete was acknowledged comes back, and no message
//     is leased twice at once.
func TestPostgresOutage(t *testing.T) {
	skipnote.SkipUnlessLong(t, "PostgreSQL stopped under two nodes")
	t.Parallel()
	pg := pgtest.MustStart(t)
	nodes := startMultiNodes(t, pg, 2)
	const (
		queue, pollQueue  = "outage", "outage-poll"
		visibilityTimeout = 5
		messages          = 60
	)
	mnCreateQueue(t, nodes[0], queue, map[string]string{"VisibilityTimeout": strconv.Itoa(visibilityTimeout)})
	mnCreateQueue(t, nodes[0], pollQueue, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	l := newMNLedger(t)

	// Before: messages sent through both nodes, some of them received, and
	// half of those deleted; the others' receipts are deleted during the
	// outage, where the delete cannot be acknowledged.
	var bodies [2][]string
	for i := range messages {
		bodies[i%2] = append(bodies[i%2], fmt.Sprintf("before-%03d", i))
	}
	for i, n := range nodes {
		l.sendBatches(ctx, n, queue, "", bodies[i])
	}
	l.report(t)
	if len(l.sent) != messages {
		t.Fatalf("%d of %d sends acknowledged before the outage", len(l.sent), messages)
	}
	held, deletedBefore := receiveSome(t, l, nodes[0], queue, 20)

	// A long poll waiting on each node when the database goes away.
	polls := make(chan outagePoll, len(nodes))
	pollStart := time.Now()
	for i, n := range nodes {
		go func() { polls <- longPoll(ctx, n.client, n.queueURL(pollQueue), i) }()
	}
	time.Sleep(time.Second) // for the polls to reach their nodes

	pg.Down()
	down := time.Now()
	t.Logf("PostgreSQL stopped")
	var seen outageAnswers
	var wg sync.WaitGroup
	// Requests begin for the retry bound's span less a second; each takes
	// up to the bound to be answered, so all are answered with the database
	// still down, and the outage lasts about twice the bound.
	issueUntil := down.Add(storeRetryBound - time.Second)
	for i, n := range nodes {
		url := n.queueURL(queue)
		ops := map[string]func() error{
			"send": func() error {
				_, err := n.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(fmt.Sprintf("during-%d", i))})
				return err
			},
			"receive": func() error {
				_, err := n.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0})
				return err
			},
			"delete": func() error {
				entries := make([]types.DeleteMessageBatchRequestEntry, len(held))
				for j, h := range held {
					entries[j] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), ReceiptHandle: aws.String(h)}
				}
				_, err := n.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &url, Entries: entries})
				return err
			},
			"get attributes": func() error {
				_, err := n.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
				return err
			},
		}
		for name, op := range ops {
			wg.Go(func() {
				for time.Now().Before(issueUntil) {
					asked := time.Now()
					seen.note(i, name, op(), time.Since(asked))
				}
			})
		}
		wg.Go(func() {
			for time.Now().Before(issueUntil) {
				seen.noteHealth(i, healthz(n.URL))
				time.Sleep(500 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	if rest := 2*storeRetryBound - time.Since(down); rest > 0 {
		time.Sleep(rest)
	}
	if err := pg.Up(ctx); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	t.Logf("PostgreSQL started again after %v down", up.Sub(down).Round(time.Millisecond))
	seen.check(t, len(nodes))

	// Back in service: a send through each node is acknowledged. Until
	// then a send may still be answered 503, and nothing else.
	for i, n := range nodes {
		testutil.CheckFor(t, 30*time.Second, func() error {
			err := l.sendOne(ctx, n, queue, fmt.Sprintf("after-%d", i))
			if status, _ := errorStatus(err); err != nil && status != http.StatusServiceUnavailable {
				t.Errorf("node %d: send after the outage: %v", i, err)
			}
			return err
		})
		t.Logf("node %d: back in service %v after PostgreSQL started", i, time.Since(up).Round(time.Millisecond))
		if h := healthz(n.URL); h.status != http.StatusOK {
			t.Errorf("node %d: /healthz %d %q after the outage", i, h.status, h.body)
		}
	}

	// The long polls waiting at the outage are answered now.
	for i := range nodes {
		if _, err := nodes[0].client.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl: aws.String(nodes[0].queueURL(pollQueue)), MessageBody: aws.String(fmt.Sprintf("poll %d", i)),
		}); err != nil {
			t.Fatalf("send to the polled queue: %v", err)
		}
	}
	for range nodes {
		select {
		case r := <-polls:
			if r.err != nil || r.n != 1 {
				t.Errorf("node %d: long poll waiting at the outage: %d messages after %v, %v; want one, answered after the outage",
					r.node, r.n, r.answered.Sub(pollStart).Round(time.Millisecond), r.err)
				continue
			}
			t.Logf("node %d: long poll waiting at the outage answered %v after it began (%v after PostgreSQL started)",
				r.node, r.answered.Sub(pollStart).Round(time.Millisecond), r.answered.Sub(up).Round(time.Millisecond))
		case <-time.After(30 * time.Second):
			t.Error("a long poll waiting at the outage never answered")
		}
	}

	// Nothing acknowledged lost: drain through both nodes.
	stop := make(chan struct{})
	for i, n := range nodes {
		wg.Go(func() { l.consume(ctx, i, n, n, queue, stop) })
	}
	l.awaitDrained(t, nodes, queue, time.Minute, nil)
	close(stop)
	wg.Wait()
	l.report(t)
	redelivered := l.checkLeases(t, visibilityTimeout*time.Second)
	l.mu.Lock()
	for _, id := range deletedBefore {
		if n := len(l.leases[id]); n != 1 {
			t.Errorf("message %s: delete acknowledged before the outage, yet received %d times", id, n)
		}
	}
	sent := len(l.sent)
	l.mu.Unlock()
	t.Logf("%d sends acknowledged, all received; %d messages received more than once (the receipts held through the outage)", sent, redelivered)
}

// receiveSome receives up to n messages through node, deletes every other
// one and records both in the ledger; it returns the receipts not deleted
// and the ids deleted.
func receiveSome(t *testing.T, l *mnLedger, n *mnNode, queue string, want int) (held, deleted []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for len(held)+len(deleted) < want {
		requested := time.Now()
		out, err := n.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(n.queueURL(queue)), MaxNumberOfMessages: int32(min(10, want-len(held)-len(deleted))),
		})
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		answered := time.Now()
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			lease := &mnLease{consumer: -1, requested: requested, answered: answered, handle: aws.ToString(m.ReceiptHandle)}
			l.mu.Lock()
			l.leases[id] = append(l.leases[id], lease)
			l.mu.Unlock()
			if len(held) < len(deleted) {
				held = append(held, lease.handle)
				continue
			}
			lease.deleteAsked = time.Now()
			if _, err := n.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(n.queueURL(queue)), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("delete: %v", err)
			}
			l.mu.Lock()
			l.deleted[id] = true
			l.mu.Unlock()
			deleted = append(deleted, id)
		}
	}
	return held, deleted
}

// sendOne sends body through n and records it in the ledger once
// acknowledged.
func (l *mnLedger) sendOne(ctx context.Context, n *mnNode, queue, body string) error {
	out, err := n.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(n.queueURL(queue)), MessageBody: aws.String(body)})
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent[aws.ToString(out.MessageId)] = body
	return nil
}

// outagePoll is how a long poll ended.
type outagePoll struct {
	node     int
	n        int
	err      error
	answered time.Time
}

// longPoll waits up to 20 s for one message on queueURL and deletes it.
func longPoll(ctx context.Context, c *sqs.Client, queueURL string, node int) outagePoll {
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &queueURL, WaitTimeSeconds: 20, MaxNumberOfMessages: 1})
	r := outagePoll{node: node, err: err, answered: time.Now()}
	if err != nil {
		return r
	}
	r.n = len(out.Messages)
	for _, m := range out.Messages {
		_, r.err = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &queueURL, ReceiptHandle: m.ReceiptHandle})
	}
	return r
}

// health is one GET /healthz answer.
type health struct {
	status int
	body   string
	err    error
}

func healthz(base string) health {
	return healthOver(&http.Client{Timeout: 5 * time.Second}, base)
}

// healthOver is healthz asked with client.
func healthOver(client *http.Client, base string) health {
	resp, err := client.Get(base + "/healthz")
	if err != nil {
		return health{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return health{status: resp.StatusCode, body: strings.TrimSpace(string(b)), err: err}
}

// outageAnswers collects what the nodes answered during an outage.
type outageAnswers struct {
	mu          sync.Mutex
	unavailable map[string]int // "node N op": 503 ServiceUnavailable answers
	slowest     time.Duration  // the longest a 503 took
	wrong       []string       // anything else: each fails the test
	healthy     int            // /healthz answers checked
	healthBody  string         // the last of them
}

// errorStatus is the HTTP status and error code of err as the SDK saw it.
func errorStatus(err error) (int, string) {
	var re *awshttp.ResponseError
	var ae smithy.APIError
	status, code := 0, ""
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	return status, code
}

func (a *outageAnswers) note(node int, op string, err error, took time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.unavailable == nil {
		a.unavailable = make(map[string]int)
	}
	status, code := errorStatus(err)
	switch {
	case err == nil && op == "send":
		a.wrong = append(a.wrong, fmt.Sprintf("node %d: a send was acknowledged with the database down", node))
	case err == nil:
		// A read the node could answer without the database.
	case status == http.StatusServiceUnavailable && code == "ServiceUnavailable":
		a.unavailable[fmt.Sprintf("node %d %s", node, op)]++
		a.slowest = max(a.slowest, took)
	default:
		a.wrong = append(a.wrong, fmt.Sprintf("node %d %s: HTTP %d %s after %v, want 503 ServiceUnavailable: %v", node, op, status, code, took.Round(time.Millisecond), err))
	}
}

func (a *outageAnswers) noteHealth(node int, h health) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.healthy++
	a.healthBody = h.body
	if h.err != nil || h.status != http.StatusServiceUnavailable || !strings.HasPrefix(h.body, "store unavailable: database ") {
		a.wrong = append(a.wrong, fmt.Sprintf("node %d: /healthz during the outage answered %d %q (%v), want 503 naming the cause", node, h.status, h.body, h.err))
	}
}

// check fails the test for every wrong answer, and unless every node
// answered a send with 503 and /healthz was asked.
func (a *outageAnswers) check(t *testing.T, nodes int) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, w := range a.wrong {
		t.Error(w)
	}
	for i := range nodes {
		if a.unavailable[fmt.Sprintf("node %d send", i)] == 0 {
			t.Errorf("node %d: no send answered 503 ServiceUnavailable during the outage", i)
		}
	}
	if a.healthy == 0 {
		t.Error("/healthz was not asked during the outage")
	}
	t.Logf("during the outage: 503 ServiceUnavailable answers %v (the slowest after %v); %d /healthz answers checked, the last %q",
		a.unavailable, a.slowest.Round(time.Millisecond), a.healthy, a.healthBody)
}
