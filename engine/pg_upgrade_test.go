package engine_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/pgstore"
)

// mustOldSchema applies the migrations up to version upTo, as an older
// Baton left the database.
func mustOldSchema(t *testing.T, url string, upTo int) {
	pgtest.OldSchema(t, url, "../store/pgstore/migrations", upTo, true)
}

// TestUpgradeFromOldSchemas: a database an older Baton left (schema at
// 0003 to 0006, or 0012, the last before the partial indexes of groups and
// states, with queues, messages in every state, with a group id and
// without, FIFO deduplication keys and a running move task) is opened by two new nodes
// at once, migrated once, and keeps working.
func TestUpgradeFromOldSchemas(t *testing.T) {
	t.Parallel()
	pg := pgtest.MustStart(t)
	for _, upTo := range []int{3, 4, 5, 6, 12} {
		t.Run(fmt.Sprint(upTo), func(t *testing.T) {
			testUpgrade(t, pg, upTo)
		})
	}
}

func testUpgrade(t *testing.T, pg *pgtest.Cluster, upTo int) {
	ctx := context.Background()
	url := pg.MustDatabase(t)
	mustOldSchema(t, url, upTo)
	now := testutil.Epoch
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	attrs := `{"delay_seconds":0,"maximum_message_size":262144,"message_retention_period":345600,"receive_message_wait_time_seconds":0,"visibility_timeout":30,"kms_data_key_reuse_period_seconds":300,"sqs_managed_sse_enabled":true,"fifo_queue":false,"content_based_deduplication":false}`
	fifoAttrs := strings.Replace(attrs, `"fifo_queue":false,"content_based_deduplication":false`, `"fifo_queue":true,"content_based_deduplication":true,"deduplication_scope":"queue","fifo_throughput_limit":"perQueue"`, 1)
	dlqArn := "arn:aws:sqs:us-east-1:" + sharedAccount + ":old-dlq"
	redrive := strings.Replace(attrs, `"visibility_timeout":30`, `"visibility_timeout":30,"redrive_policy":"{\"deadLetterTargetArn\":\"`+dlqArn+`\",\"maxReceiveCount\":5}"`, 1)
	stmts := []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO baton_queues (id, account, name, attributes, tags, created_at, modified_at, dedup_scope, fifo, last_seq) VALUES
			(11, $1, 'old-std', $2, '{"k":"v"}', $5, $5, '', false, 0),
			(12, $1, 'old.fifo', $3, '{}', $5, $5, 'queue', true, 2),
			(13, $1, 'old-dlq', $2, '{}', $5, $5, '', false, 0),
			(14, $1, 'old-src', $4, '{}', $5, $5, '', false, 0),
			(15, $1, 'old-fair', $2, '{}', $5, $5, '', false, 0)`, []any{sharedAccount, attrs, fifoAttrs, redrive, now}},
		{`INSERT INTO baton_messages (queue_id, id, group_id, body, attributes, trace_header, dedup_id, sequence_number, sender_id, sent_at, dead_letter_source_arn, visible_at, leased, receive_count, first_received_at, epoch, leased_at) VALUES
			(11, '00000000-0000-4000-8000-000000000001', '', 'visible', '{"a":{"t":"String","s":"x"}}', '', '', '', $1, $2, '', $2, false, 0, NULL, 0, NULL),
			(11, '00000000-0000-4000-8000-000000000002', '', 'leased', NULL, '', '', '', $1, $2, '', $3, true, 1, $2, 1, $2),
			(12, '00000000-0000-4000-8000-000000000003', 'g', 'f1', NULL, '', 'd1', '10000000000000000001', $1, $2, '', $3, true, 1, $2, 1, $2),
			(12, '00000000-0000-4000-8000-000000000004', 'g', 'f2', NULL, '', 'd2', '10000000000000000002', $1, $2, '', $2, false, 0, NULL, 0, NULL),
			(13, '00000000-0000-4000-8000-000000000005', '', 'dead', NULL, '', '', '', $1, $2, 'arn:aws:sqs:us-east-1:000000000000:old-src', $2, false, 5, $2, 5, $2),
			(15, '00000000-0000-4000-8000-000000000006', '', 'u-visible', NULL, '', '', '', $1, $2, '', $2, false, 0, NULL, 0, NULL),
			(15, '00000000-0000-4000-8000-000000000007', '', 'u-leased', NULL, '', '', '', $1, $2, '', $3, true, 1, $2, 1, $2),
			(15, '00000000-0000-4000-8000-000000000008', '', 'u-delayed', NULL, '', '', '', $1, $2, '', $4, false, 0, NULL, 0, NULL),
			(15, '00000000-0000-4000-8000-000000000009', 'x', 'x-visible', NULL, '', '', '', $1, $2, '', $2, false, 0, NULL, 0, NULL),
			(15, '00000000-0000-4000-8000-000000000010', 'y', 'y-leased', NULL, '', '', '', $1, $2, '', $3, true, 1, $2, 1, $2)`,
			[]any{sharedAccount, now, now.Add(30 * time.Second), now.Add(20 * time.Second)}},
		{`INSERT INTO baton_dedup (queue_id, dedup_key, message_id, sequence_number, accepted_at) VALUES
			(12, 'd1', '00000000-0000-4000-8000-000000000003', '10000000000000000001', $1),
			(12, 'd2', '00000000-0000-4000-8000-000000000004', '10000000000000000002', $1)`, []any{now}},
		{`INSERT INTO baton_move_tasks (handle, source_arn, destination_arn, max_per_second, status, moved, to_move, failure_reason, started_at)
			VALUES ('old-task', $1, '', 0, 'RUNNING', 0, 1, '', $2)`, []any{dlqArn, now}},
	}
	if upTo >= 7 {
		// A server at such a schema named its queues' region.
		stmts = append(stmts, struct {
			sql  string
			args []any
		}{`UPDATE baton_queues SET region = 'us-east-1'`, nil})
	}
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s.sql, s.args...); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(ctx)

	clock := clock.NewFake(now.Add(time.Second))
	nodes := make([]*engine.Engine, 2)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			s, err := pgstore.Open(ctx, url, pgstore.Options{Logger: quietLog})
			if err != nil {
				t.Error(err)
				return
			}
			key, err := s.ReceiptKey(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			e, err := engine.New(engine.Config{Store: s, Clock: clock, ReceiptKey: key, Logger: quietLog})
			if err != nil {
				t.Error(err)
				return
			}
			t.Cleanup(func() { e.Close(); s.Close() })
			nodes[i] = e
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	std := engine.QueueRef{Account: sharedAccount, Name: "old-std"}
	got, err := nodes[1].ReceiveMessage(ctx, std, engine.ReceiveParams{MaxNumberOfMessages: ptr(10), MessageAttributeNames: []string{"All"}})
	if err != nil || len(got) != 1 || got[0].Body != "visible" || got[0].MD5OfBody != engine.MD5OfBody("visible") || got[0].MessageAttributes["a"].StringValue != "x" {
		t.Fatalf("receive old-std: %+v, %v; want the visible message with its MD5 and attribute", got, err)
	}
	if err := nodes[0].DeleteMessage(ctx, std, got[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	attrsNow, err := nodes[0].GetQueueAttributes(ctx, std, []string{"All"})
	if err != nil || attrsNow["ApproximateNumberOfMessagesNotVisible"] != "1" || attrsNow["ApproximateNumberOfMessages"] != "0" {
		t.Fatalf("old-std attributes %v, %v; want 1 in flight, 0 visible", attrsNow, err)
	}
	// A fair queue: each kind of message counted, and received, in each
	// state (below, once the clock passes every lease and the delay, all
	// five).
	fair := engine.QueueRef{Account: sharedAccount, Name: "old-fair"}
	attrsNow, err = nodes[1].GetQueueAttributes(ctx, fair, []string{"All"})
	if err != nil || attrsNow["ApproximateNumberOfMessages"] != "2" || attrsNow["ApproximateNumberOfMessagesNotVisible"] != "2" ||
		attrsNow["ApproximateNumberOfMessagesDelayed"] != "1" {
		t.Fatalf("old-fair attributes %v, %v; want 2 visible, 2 in flight, 1 delayed", attrsNow, err)
	}
	checkBodies := func(what string, got []engine.ReceivedMessage, err error, want ...string) {
		t.Helper()
		var bodies []string
		for _, m := range got {
			bodies = append(bodies, m.Body)
		}
		sort.Strings(bodies)
		if err != nil || !slices.Equal(bodies, want) {
			t.Fatalf("%s: %v, %v; want %v", what, bodies, err, want)
		}
	}
	got, err = nodes[0].ReceiveMessage(ctx, fair, engine.ReceiveParams{MaxNumberOfMessages: ptr(10)})
	checkBodies("receive old-fair", got, err, "u-visible", "x-visible")
	fifo := engine.QueueRef{Account: sharedAccount, Name: "old.fifo"}
	// d2 is still within its dedup window: a duplicate.
	res, err := nodes[0].SendMessage(ctx, fifo, engine.SendParams{Body: "dup", GroupID: "g", DedupID: "d2"})
	if err != nil || res.MessageID != "00000000-0000-4000-8000-000000000004" {
		t.Fatalf("duplicate send: %+v, %v; want the old message id", res, err)
	}
	res, err = nodes[1].SendMessage(ctx, fifo, engine.SendParams{Body: "f3", GroupID: "g"})
	if err != nil || res.SequenceNumber != "10000000000000000003" {
		t.Fatalf("send f3: %+v, %v; want sequence number ...3", res, err)
	}
	// g is blocked by f1's lease until t=30.
	if got, err := nodes[0].ReceiveMessage(ctx, fifo, engine.ReceiveParams{MaxNumberOfMessages: ptr(10), ReceiveRequestAttemptID: "a"}); err != nil || len(got) != 0 {
		t.Fatalf("fifo receive while f1 is leased: %d, %v; want none", len(got), err)
	}
	clock.Advance(30 * time.Second)
	first, err := nodes[0].ReceiveMessage(ctx, fifo, engine.ReceiveParams{MaxNumberOfMessages: ptr(10), ReceiveRequestAttemptID: "b"})
	if err != nil || len(first) != 3 || first[0].Body != "f1" {
		t.Fatalf("fifo receive after f1's lease: %d, %v; want f1, f2, f3", len(first), err)
	}
	again, err := nodes[1].ReceiveMessage(ctx, fifo, engine.ReceiveParams{MaxNumberOfMessages: ptr(10), ReceiveRequestAttemptID: "b"})
	if err != nil || len(again) != 3 || again[2].ReceiptHandle != first[2].ReceiptHandle {
		t.Fatalf("replay: %d, %v; want the same three", len(again), err)
	}
	got, err = nodes[1].ReceiveMessage(ctx, fair, engine.ReceiveParams{MaxNumberOfMessages: ptr(10)})
	checkBodies("receive old-fair after the leases and the delay", got, err,
		"u-delayed", "u-leased", "u-visible", "x-visible", "y-leased")
	// The old running move task is taken over and moves the dead message
	// back to old-src.
	src := engine.QueueRef{Account: sharedAccount, Name: "old-src"}
	testutil.CheckFor(t, 20*time.Second, func() error {
		clock.Advance(time.Second)
		got, err := nodes[0].ReceiveMessage(ctx, src, engine.ReceiveParams{})
		if err != nil {
			return err
		}
		if len(got) != 1 || got[0].Body != "dead" {
			return fmt.Errorf("old-src has %d messages; want the dead one moved back", len(got))
		}
		return nil
	})
}
