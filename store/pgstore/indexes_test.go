package pgstore_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/store/storetest"
)

// TestUngroupedMessagesLeaveGroupIndexAlone sends and receives a thousand
// messages without a group id, each send and lease a new row version, and
// checks that the index of groups did not grow (it holds the messages with
// a group id alone) while the primary key, which every version enters, did.
func TestUngroupedMessagesLeaveGroupIndexAlone(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	s := mustOpen(t, url)
	admin, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(t.Context())
	size := func(index string) int64 {
		t.Helper()
		var n int64
		if err := admin.QueryRow(t.Context(), `SELECT pg_relation_size($1::regclass)`, index).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	groupsBefore, pkeyBefore := size("baton_messages_by_group"), size("baton_messages_pkey")

	q := storetest.NewQueue(storetest.QueueID(1), "plain")
	storetest.MustCreateQueue(t, s, q)
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const n = 1000
	for i := 0; i < n; i += 10 {
		var msgs []*baton.Message
		for j := range 10 {
			msgs = append(msgs, storetest.NewMessage(i+j, base))
		}
		storetest.MustSend(t, s, q.ID, msgs...)
	}
	now := base.Add(time.Second)
	for got := 0; got < n; {
		msgs := storetest.MustReceive(t, s, baton.MessageReceiveParams{
			QueueID: q.ID, Now: now, Max: 10, VisibleAt: now.Add(time.Hour), RetentionCutoff: base.Add(-time.Hour),
		})
		if len(msgs) == 0 {
			t.Fatalf("received %d of %d messages, then none", got, n)
		}
		got += len(msgs)
	}

	if groupsAfter := size("baton_messages_by_group"); groupsAfter != groupsBefore {
		t.Errorf("index of groups: %d bytes before, %d after %d messages without a group were sent and received; want no growth",
			groupsBefore, groupsAfter, n)
	}
	if pkeyAfter := size("baton_messages_pkey"); pkeyAfter <= pkeyBefore {
		t.Errorf("primary key: %d bytes before, %d after; want growth, or the messages never reached the table", pkeyBefore, pkeyAfter)
	}
}
