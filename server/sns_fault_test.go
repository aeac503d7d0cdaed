package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/store/memstore"
	"github.com/baton-sqs/baton/store/pgstore"
)

// TestSNSFIFOBatchEntryFailedStopsTheBatch: PostgreSQL refuses one copy
// of a PublishBatch entry to a FIFO topic (its disk full, as a trigger
// says it) after another queue took its copy. The entry is Failed, not the
// sender's fault, and so is every entry after it, unsent, whatever its
// message group: AWS publishes a FIFO batch in entry order, and an entry
// published after one that failed would reach the queue before the
// client's retry of it. Once the database takes work again, the retry of
// the failed entries leaves each queue the group in the order sent, once
// each.
func TestSNSFIFOBatchEntryFailedStopsTheBatch(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.MustDatabase(t)
	st, err := pgstore.Open(context.Background(), dbURL, pgstore.Options{RetryFor: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := testutil.StartServer(t, testutil.Options{Store: st})
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateFIFOTopic(t, c, "orders.fifo", nil)
	envURL := srv.MustCreateQueue(t, "env.fifo", map[string]string{"FifoQueue": "true"})
	rawURL := srv.MustCreateQueue(t, "raw.fifo", map[string]string{"FifoQueue": "true"})
	mustSubscribe(t, c, topic, snsQueueARN("env.fifo"), nil)
	mustSubscribe(t, c, topic, snsQueueARN("raw.fifo"), map[string]string{"RawMessageDelivery": "true"})

	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	exec := func(sql string) {
		t.Helper()
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// Only the raw queue's copy of "two" is refused: the envelope queue
	// takes its copy first or after, as the fan-out goes.
	exec(`CREATE FUNCTION refuse_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$`)
	exec(`CREATE TRIGGER disk_full BEFORE INSERT ON baton_messages FOR EACH ROW WHEN (NEW.body = 'two') EXECUTE FUNCTION refuse_disk_full()`)

	entry := func(id, group, body string) snstypes.PublishBatchRequestEntry {
		e := batchEntry(id, body)
		e.MessageGroupId, e.MessageDeduplicationId = aws.String(group), aws.String(body)
		return e
	}
	out, err := c.PublishBatch(ctx, &awssns.PublishBatchInput{TopicArn: aws.String(topic), PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{
		entry("e1", "g", "one"), entry("e2", "g", "two"), entry("e3", "g", "three"), entry("e4", "h", "other")}})
	if err != nil {
		t.Fatal(err)
	}
	var ok []string
	for _, s := range out.Successful {
		ok = append(ok, *s.Id)
	}
	failed := map[string]bool{}
	for _, f := range out.Failed {
		failed[*f.Id] = true
		if f.SenderFault || aws.ToString(f.Code) != "ServiceUnavailable" {
			t.Errorf("entry %s failed with %s (sender's fault %v): %s, want ServiceUnavailable, not the sender's fault",
				*f.Id, aws.ToString(f.Code), f.SenderFault, aws.ToString(f.Message))
		}
	}
	if len(ok) != 1 || ok[0] != "e1" || len(failed) != 3 || !failed["e2"] || !failed["e3"] || !failed["e4"] {
		t.Errorf("successful %v, failed %v; want e1 published, e2 (refused) and e3 and e4 (after it) failed", ok, failed)
	}

	exec(`DROP TRIGGER disk_full ON baton_messages`)
	retry, err := c.PublishBatch(ctx, &awssns.PublishBatchInput{TopicArn: aws.String(topic), PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{
		entry("e2", "g", "two"), entry("e3", "g", "three"), entry("e4", "h", "other")}})
	if err != nil || len(retry.Successful) != 3 {
		t.Fatalf("retry once the database takes work: %v, %+v", err, retry)
	}
	for _, q := range []struct {
		url string
		raw bool
	}{{envURL, false}, {rawURL, true}} {
		got := groupBodies(t, srv.Client, q.url, q.raw, "g")
		if want := []string{"one", "two", "three"}; !slices.Equal(got, want) {
			t.Errorf("%s holds group g as %v, want %v", q.url, got, want)
		}
	}
}

// groupBodies receives and deletes everything a FIFO queue holds (within a
// bound) and returns the messages of group in the order received:
// the raw bodies, or the envelopes' Message.
func groupBodies(tb testing.TB, c *sqs.Client, queueURL string, raw bool, group string) []string {
	tb.Helper()
	var got []string
	for range 10 {
		msgs := receiveAll(tb, c, queueURL)
		if len(msgs) == 0 {
			return got
		}
		for _, m := range msgs {
			if m.Attributes["MessageGroupId"] == group {
				body := *m.Body
				if !raw {
					var env struct{ Message string }
					if err := json.Unmarshal([]byte(body), &env); err != nil {
						tb.Fatalf("envelope: %v: %s", err, body)
					}
					body = env.Message
				}
				got = append(got, body)
			}
			if _, err := c.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				tb.Fatal(err)
			}
		}
	}
	tb.Fatalf("%s still holds messages after ten receives", queueURL)
	return nil
}

// slowCopyStore holds one queue's copy of the message "first" until a
// copy of "second" is stored, or for at most a few seconds: a store slow
// for one queue while another publish of the same group comes in.
type slowCopyStore struct {
	*memstore.Store
	slowQueue          uint64
	waiting            chan struct{} // closed when the slow copy waits
	second             chan struct{} // closed when a copy of "second" is stored
	waitOnce, sentOnce sync.Once
}

func (s *slowCopyStore) MessageSend(ctx context.Context, p baton.MessageSendParams) ([]baton.MessageSent, error) {
	if p.QueueID == s.slowQueue && p.Messages[0].Body == "first" {
		s.waitOnce.Do(func() { close(s.waiting) })
		select {
		case <-s.second:
		case <-time.After(5 * time.Second):
		}
	}
	sent, err := s.Store.MessageSend(ctx, p)
	if err == nil && p.Messages[0].Body == "second" {
		s.sentOnce.Do(func() { close(s.second) })
	}
	return sent, err
}

// TestSNSFIFOGroupInSequenceOrder: a publish to a FIFO topic comes in
// while the one before it of the same message group is still being
// copied (one queue's store slow). Every subscribed queue gets the group
// in the order of the publishes' SequenceNumbers, as AWS delivers a FIFO
// topic's group: the second is numbered and sent only once the first's
// copies are all taken. (Before, the second overtook the first in the slow
// queue, and the queues disagreed.)
func TestSNSFIFOGroupInSequenceOrder(t *testing.T) {
	t.Parallel()
	st := &slowCopyStore{Store: memstore.New(), waiting: make(chan struct{}), second: make(chan struct{})}
	srv := testutil.StartServer(t, testutil.Options{Store: st})
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateFIFOTopic(t, c, "ordered.fifo", nil)
	var urls []string
	for _, name := range []string{"fast.fifo", "slow.fifo"} {
		urls = append(urls, srv.MustCreateQueue(t, name, map[string]string{"FifoQueue": "true"}))
		mustSubscribe(t, c, topic, snsQueueARN(name), map[string]string{"RawMessageDelivery": "true"})
	}
	slow, err := srv.Engine.GetQueue(ctx, engine.QueueRef{Region: "us-east-1", Account: testutil.Account, Name: "slow.fifo"})
	if err != nil {
		t.Fatal(err)
	}
	st.slowQueue = slow.ID

	publish := func(body string) (string, error) {
		out, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(body),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(body)})
		if err != nil {
			return "", err
		}
		return *out.SequenceNumber, nil
	}
	type answer struct {
		seq string
		err error
	}
	firstDone := make(chan answer, 1)
	go func() {
		seq, err := publish("first")
		firstDone <- answer{seq, err}
	}()
	select {
	case <-st.waiting:
	case <-time.After(30 * time.Second):
		t.Fatal("the first publish's slow copy never began")
	}
	secondSeq, err := publish("second")
	if err != nil {
		t.Fatal(err)
	}
	first := <-firstDone
	if first.err != nil {
		t.Fatal(first.err)
	}
	if first.seq >= secondSeq {
		t.Errorf("SequenceNumbers: first %s, second %s; want the first lower", first.seq, secondSeq)
	}
	for _, u := range urls {
		if got := groupBodies(t, srv.Client, u, true, "g"); !slices.Equal(got, []string{"first", "second"}) {
			t.Errorf("%s holds group g as %v, want [first second] (SequenceNumber order)", u, got)
		}
	}
}

// TestSNSFIFORetryWhileFirstIsSent: a client gives up waiting for a
// publish to a FIFO topic (one queue's store slow) and publishes it again,
// same deduplication id, while the first is still being copied. The retry
// is answered as the first, with its MessageId and SequenceNumber, and
// sends nothing: the standard queue subscribed (which has no
// deduplication of its own) holds one copy, not two.
func TestSNSFIFORetryWhileFirstIsSent(t *testing.T) {
	t.Parallel()
	st := &slowCopyStore{Store: memstore.New(), waiting: make(chan struct{}), second: make(chan struct{})}
	srv := testutil.StartServer(t, testutil.Options{Store: st})
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateFIFOTopic(t, c, "retried.fifo", nil)
	fifoURL := srv.MustCreateQueue(t, "copies.fifo", map[string]string{"FifoQueue": "true"})
	stdURL := srv.MustCreateQueue(t, "standard", nil)
	mustSubscribe(t, c, topic, snsQueueARN("copies.fifo"), map[string]string{"RawMessageDelivery": "true"})
	mustSubscribe(t, c, topic, snsQueueARN("standard"), map[string]string{"RawMessageDelivery": "true"})
	slow, err := srv.Engine.GetQueue(ctx, engine.QueueRef{Region: "us-east-1", Account: testutil.Account, Name: "standard"})
	if err != nil {
		t.Fatal(err)
	}
	st.slowQueue = slow.ID

	publish := func() (*awssns.PublishOutput, error) {
		return c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("first"),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("order-1")})
	}
	type answer struct {
		out *awssns.PublishOutput
		err error
	}
	firstDone := make(chan answer, 1)
	go func() {
		out, err := publish()
		firstDone <- answer{out, err}
	}()
	select {
	case <-st.waiting:
	case <-time.After(30 * time.Second):
		t.Fatal("the first publish's slow copy never began")
	}
	retry, err := publish()
	if err != nil {
		t.Fatal(err)
	}
	first := <-firstDone
	if first.err != nil {
		t.Fatal(first.err)
	}
	if *retry.MessageId != *first.out.MessageId || *retry.SequenceNumber != *first.out.SequenceNumber {
		t.Errorf("retry answered %s/%s, want the first's %s/%s", *retry.MessageId, *retry.SequenceNumber, *first.out.MessageId, *first.out.SequenceNumber)
	}
	for _, u := range []string{fifoURL, stdURL} {
		if n := len(receiveAll(t, srv.Client, u)); n != 1 {
			t.Errorf("%s holds %d copies, want 1", u, n)
		}
	}
}

// refusingStore refuses every message send as a store that cannot take
// work now (baton.ErrUnavailable), and counts the sends asked of it.
type refusingStore struct {
	*memstore.Store
	sends atomic.Int64
}

func (s *refusingStore) MessageSend(context.Context, baton.MessageSendParams) ([]baton.MessageSent, error) {
	s.sends.Add(1)
	return nil, fmt.Errorf("%w: writes refused", baton.ErrUnavailable)
}

// TestSNSPublishStopsAtTheFirstStoreFailure: once a copy fails for the
// store, the publish starts no more copies: it is answered
// ServiceUnavailable (the client retries it whole), at most the copies
// already under way (eight at a time) were asked of the store, and the
// others are noted as not sent. Before, every one of 40 subscriptions was
// tried, each after the store's retry bound on a database that refuses
// writes (a primary gone read-only): 25 s, where one send takes 5.
func TestSNSPublishStopsAtTheFirstStoreFailure(t *testing.T) {
	t.Parallel()
	st := &refusingStore{Store: memstore.New()}
	srv := testutil.StartServer(t, testutil.Options{Store: st})
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "refused")
	const subs = 40
	for i := range subs {
		name := fmt.Sprintf("q%02d", i)
		srv.MustCreateQueue(t, name, nil)
		mustSubscribe(t, c, topic, snsQueueARN(name), nil)
	}
	_, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m")})
	wantAPIError(t, err, "ServiceUnavailable", 503)
	if n := st.sends.Load(); n < 1 || n > 8 {
		t.Errorf("%d copies asked of the store, want 1 to 8 (those under way when the first failed)", n)
	}
	var topics server.TopicListJSON
	getJSON(t, srv.URL+"/admin/api/topics", &topics)
	if len(topics.Recent) != 1 {
		t.Fatalf("%d publishes recorded, want 1", len(topics.Recent))
	}
	p, notSent := topics.Recent[0], 0
	for _, o := range p.Outcomes {
		if o.Outcome == "failed" && strings.HasPrefix(o.Reason, "not sent: another copy of this publish failed") {
			notSent++
		}
	}
	if want := subs - int(st.sends.Load()); notSent != want || p.Failed != subs || p.Error == "" {
		t.Errorf("publish recorded with %d copies failed, %d of them noted as not sent, error %q; want %d, %d and the error",
			p.Failed, notSent, p.Error, subs, want)
	}
}

// TestSNSPublishBatchStopsAtTheFirstStoreFailure: a standard topic's
// PublishBatch whose first entry fails for the store publishes none of
// the others: each is Failed, not the sender's fault, without its copies
// being asked of the store (each would have waited the store's retry
// bound), at most the eight copies under way when the first failed.
func TestSNSPublishBatchStopsAtTheFirstStoreFailure(t *testing.T) {
	t.Parallel()
	st := &refusingStore{Store: memstore.New()}
	srv := testutil.StartServer(t, testutil.Options{Store: st})
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "refused-batch")
	for i := range 20 {
		name := fmt.Sprintf("q%02d", i)
		srv.MustCreateQueue(t, name, nil)
		mustSubscribe(t, c, topic, snsQueueARN(name), nil)
	}
	var entries []snstypes.PublishBatchRequestEntry
	for i := range 10 {
		entries = append(entries, batchEntry(fmt.Sprintf("e%d", i), "m"))
	}
	out, err := c.PublishBatch(ctx, &awssns.PublishBatchInput{TopicArn: aws.String(topic), PublishBatchRequestEntries: entries})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Successful) != 0 || len(out.Failed) != 10 {
		t.Fatalf("%d successful, %d failed; want all 10 failed", len(out.Successful), len(out.Failed))
	}
	for i, f := range out.Failed {
		msg := aws.ToString(f.Message)
		if aws.ToString(f.Code) != "ServiceUnavailable" || f.SenderFault || i > 0 && !strings.HasPrefix(msg, "Not published: entry e0 before it failed") {
			t.Errorf("entry %s: %s (sender's fault %v) %q", aws.ToString(f.Id), aws.ToString(f.Code), f.SenderFault, msg)
		}
	}
	if n := st.sends.Load(); n < 1 || n > 8 {
		t.Errorf("%d copies asked of the store, want 1 to 8 (those of the first entry under way when its first failed)", n)
	}
}
