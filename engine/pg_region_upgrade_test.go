package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/pgstore"
)

// TestUpgradeGivesQueuesTheDefaultRegion: a database an older Baton left,
// before queues had a region (schema 0006), gives its queues and deleted
// names the region the first new server opens it with, its default region,
// the one they were served in, as are those a server not yet upgraded makes;
// a later server with another default leaves them there.
func TestUpgradeGivesQueuesTheDefaultRegion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := pgtest.MustStart(t)
	url := pg.MustDatabase(t)
	mustOldSchema(t, url, 6)
	now := testutil.Epoch
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	attrs := `{"delay_seconds":0,"maximum_message_size":262144,"message_retention_period":345600,"receive_message_wait_time_seconds":0,"visibility_timeout":30,"kms_data_key_reuse_period_seconds":300,"sqs_managed_sse_enabled":true,"fifo_queue":false,"content_based_deduplication":false}`
	for _, s := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO baton_queues (id, account, name, attributes, tags, created_at, modified_at, dedup_scope, fifo, last_seq)
			VALUES (21, $1, 'old', $2, '{}', $3, $3, '', false, 0)`, []any{sharedAccount, attrs, now}},
		{`INSERT INTO baton_messages (queue_id, id, group_id, body, attributes, trace_header, dedup_id, sequence_number, sender_id, sent_at, dead_letter_source_arn, visible_at)
			VALUES (21, '00000000-0000-4000-8000-000000000001', '', 'kept', NULL, '', '', '', $1, $2, '', $2)`, []any{sharedAccount, now}},
		{`INSERT INTO baton_deleted_queues (account, name, deleted_at) VALUES ($1, 'gone', $2)`, []any{sharedAccount, now}},
	} {
		if _, err := conn.Exec(ctx, s.sql, s.args...); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(ctx)

	clock := baton.NewFakeClock(now.Add(time.Second))
	open := func(region string) *engine.Engine {
		s, err := pgstore.Open(ctx, url, pgstore.Options{Logger: quietLog, DefaultRegion: region})
		if err != nil {
			t.Fatal(err)
		}
		e, err := engine.New(engine.Config{Store: s, Clock: clock, Region: region, Logger: quietLog})
		if err != nil {
			s.Close()
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close(); s.Close() })
		return e
	}
	eu := open("eu-west-1")
	old := engine.QueueRef{Account: sharedAccount, Name: "old"}
	a, err := eu.GetQueueAttributes(ctx, old, []string{"QueueArn", "ApproximateNumberOfMessages"})
	if err != nil || a["QueueArn"] != "arn:aws:sqs:eu-west-1:"+sharedAccount+":old" || a["ApproximateNumberOfMessages"] != "1" {
		t.Fatalf("old queue after the upgrade: %v, %v; want it in eu-west-1 with its message", a, err)
	}
	_, err = eu.CreateQueue(ctx, engine.CreateQueueParams{Account: sharedAccount, Name: "gone"})
	if !baton.IsCode(err, baton.ErrQueueDeletedRecently) {
		t.Errorf("re-create the deleted queue in eu-west-1 at once: %v; want QueueDeletedRecently", err)
	}

	// A server not yet upgraded names no region: its queues go to the
	// migration's default region too.
	conn, err = pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO baton_queues (id, account, name, attributes, tags, created_at, modified_at, dedup_scope, fifo)
		VALUES (22, $1, 'by-old-server', $2, '{}', $3, $3, '', false)`, sharedAccount, attrs, now); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if _, err := eu.GetQueue(ctx, engine.QueueRef{Account: sharedAccount, Name: "by-old-server"}); err != nil {
		t.Errorf("a queue an old server made after the upgrade: %v; want it in eu-west-1", err)
	}

	us := open("us-east-1")
	if _, err := us.GetQueue(ctx, old); !baton.IsCode(err, baton.ErrQueueDoesNotExist) {
		t.Errorf("old queue in us-east-1: %v; want QueueDoesNotExist", err)
	}
	if _, err := us.GetQueue(ctx, engine.QueueRef{Region: "eu-west-1", Account: sharedAccount, Name: "old"}); err != nil {
		t.Errorf("old queue in eu-west-1 through a server whose default is us-east-1: %v", err)
	}
	if _, err := us.CreateQueue(ctx, engine.CreateQueueParams{Account: sharedAccount, Name: "gone"}); err != nil {
		t.Errorf("create gone in us-east-1: %v; the deletion was in eu-west-1", err)
	}
}
