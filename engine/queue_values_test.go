package engine_test

import (
	"bytes"
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/pgtest"
)

// TestControlCharactersInQueueStrings: tag keys and values and a
// KmsMasterKeyId holding U+0000 are refused as invalid values. PostgreSQL's
// jsonb cannot hold U+0000, so the PostgreSQL store failed them with an
// InternalError; nor can the Query protocol's XML carry them back.
func TestControlCharactersInQueueStrings(t *testing.T) {
	t.Parallel()
	pg := pgtest.MustStart(t)
	nodes, _ := startCluster(t, pg, 1)
	e := nodes[0]
	ctx := context.Background()
	for _, tags := range []map[string]string{{"k": "a\x00b"}, {"a\x00b": "v"}, {"k": "bell\x07"}} {
		err := e.TagQueue(ctx, clusterQueue, tags)
		if be := baton.AsError(err); err == nil || be.Code != baton.ErrInvalidParameterValue {
			t.Errorf("TagQueue(%q): %v; want InvalidParameterValue", tags, err)
		}
		_, err = e.CreateQueue(ctx, engine.CreateQueueParams{Account: clusterQueue.Account, Name: "tagged", Tags: tags})
		if be := baton.AsError(err); err == nil || be.Code != baton.ErrInvalidParameterValue {
			t.Errorf("CreateQueue with tags %q: %v; want InvalidParameterValue", tags, err)
		}
	}
	err := e.SetQueueAttributes(ctx, clusterQueue, map[string]string{"KmsMasterKeyId": "alias/\x00"})
	if be := baton.AsError(err); err == nil || be.Code != baton.ErrInvalidAttributeValue {
		t.Errorf("SetQueueAttributes KmsMasterKeyId with U+0000: %v; want InvalidAttributeValue", err)
	}
	// What every store keeps as given.
	odd := map[string]string{`k'"; DROP TABLE baton_queues; --`: `\u0000 ' " \ ${} ü 😀`, "e": ""}
	if err := e.TagQueue(ctx, clusterQueue, odd); err != nil {
		t.Fatal(err)
	}
	got, err := e.ListQueueTags(ctx, clusterQueue)
	if err != nil || len(got) != 2 || got[`k'"; DROP TABLE baton_queues; --`] != odd[`k'"; DROP TABLE baton_queues; --`] {
		t.Errorf("tags %q, %v; want %q", got, err, odd)
	}
	if err := e.SetQueueAttributes(ctx, clusterQueue, map[string]string{"KmsMasterKeyId": `alias/'"\u0000`}); err != nil {
		t.Fatal(err)
	}
	attrs, err := e.GetQueueAttributes(ctx, clusterQueue, []string{"KmsMasterKeyId"})
	if err != nil || attrs["KmsMasterKeyId"] != `alias/'"\u0000` {
		t.Errorf("KmsMasterKeyId %q, %v", attrs["KmsMasterKeyId"], err)
	}
}

// TestBigValuesAcrossNodes: 1 MiB bodies and full attribute maps sent on one
// node come back whole on the other, and 10,000 queues list and page
// completely.
func TestBigValuesAcrossNodes(t *testing.T) {
	t.Parallel()
	url := pgtest.MustStart(t).MustDatabase(t)
	nodes, _ := startClusterOn(t, url, 2)
	ctx := context.Background()
	if err := nodes[0].SetQueueAttributes(ctx, clusterQueue, map[string]string{"MaximumMessageSize": "1048576"}); err != nil {
		t.Fatal(err)
	}
	attrs := map[string]baton.MessageAttribute{}
	size := 0
	for i := range 10 {
		n := "attr." + strings.Repeat("x", i+1)
		a := baton.MessageAttribute{DataType: "String.ü", StringValue: strings.Repeat("é", 500)}
		if i%2 == 1 {
			a = baton.MessageAttribute{DataType: "Binary", BinaryValue: bytes.Repeat([]byte{0, 0xff}, 300)}
		}
		attrs[n] = a
		size += a.Size(n)
	}
	body := strings.Repeat("😀ab", (1<<20-size)/6) // 6 bytes a repeat
	body += strings.Repeat("z", 1<<20-size-len(body))
	sent, err := nodes[0].SendMessage(ctx, clusterQueue, engine.SendParams{Body: body, Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[0].SendMessage(ctx, clusterQueue, engine.SendParams{Body: body + "!", Attributes: attrs}); err == nil {
		t.Error("a message one byte over 1 MiB was accepted")
	}
	got, err := nodes[1].ReceiveMessage(ctx, clusterQueue, engine.ReceiveParams{MessageAttributeNames: []string{"All"}})
	if err != nil || len(got) != 1 {
		t.Fatalf("receive: %d, %v", len(got), err)
	}
	if got[0].Body != body || got[0].MD5OfBody != sent.MD5OfBody || got[0].MD5OfMessageAttributes != sent.MD5OfAttributes {
		t.Errorf("received body of %d bytes, MD5s %s/%s; want %d bytes, %s/%s", len(got[0].Body),
			got[0].MD5OfBody, got[0].MD5OfMessageAttributes, len(body), sent.MD5OfBody, sent.MD5OfAttributes)
	}

	// 10,000 queues, made by copying one row.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO baton_queues (id, region, account, name, attributes, tags, created_at, modified_at, dedup_scope, fifo)
		SELECT q.id + i, q.region, q.account, 'q' || lpad(i::text, 5, '0'), q.attributes, q.tags, q.created_at, q.modified_at, q.dedup_scope, q.fifo
		FROM baton_queues q, generate_series(1, 10000) i`); err != nil {
		t.Fatal(err)
	}
	var names []string
	token := ""
	for pages := 0; ; pages++ {
		qs, next, err := nodes[pages%2].ListQueues(ctx, engine.ListQueuesParams{Account: clusterQueue.Account, Prefix: "q", MaxResults: ptr(1000), NextToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			names = append(names, q.Name)
		}
		if next == "" {
			break
		}
		token = next
	}
	if len(names) != 10000 || names[0] != "q00001" || names[9999] != "q10000" || !sort.StringsAreSorted(names) {
		t.Errorf("listed %d queues (%v ... ); want q00001 ... q10000 in order", len(names), names[:min(3, len(names))])
	}
	qs, next, err := nodes[0].ListQueues(ctx, engine.ListQueuesParams{Account: clusterQueue.Account})
	if err != nil || len(qs) != 1000 || next != "" {
		t.Errorf("list without MaxResults: %d, next %q, %v; want 1000, no token", len(qs), next, err)
	}
}
