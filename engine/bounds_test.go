package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
)

// The ledger keeps the requesting client in every lease event for as long
// as it remembers the message. A user agent may be as long as the request's
// headers (64 KiB on `baton serve`), so an event keeps only its first
// bytes: 2,000 receives with a 60 KiB user agent held 177 MB of heap.
func TestLedgerCutsClientStrings(t *testing.T) {
	t.Parallel()
	e, _ := newEngine(t)
	ref := mkQueue(t, e, "q", nil)
	if _, err := e.SendMessage(context.Background(), ref, engine.SendParams{Body: "a"}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", 32<<10) // two bytes each: a cut must not split one
	ctx := ledger.WithClient(context.Background(), ledger.Client{Addr: "10.0.0.1", UserAgent: long})
	got, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{VisibilityTimeout: ptr(0)})
	if err != nil || len(got) != 1 {
		t.Fatal(got, err)
	}
	evs, ok, err := e.MessageHistory(context.Background(), ref, got[0].MessageID)
	if err != nil || !ok || len(evs) != 1 {
		t.Fatal(evs, ok, err)
	}
	ua := evs[0].Client.UserAgent
	if len(ua) > 160 || !strings.HasPrefix(long, ua) || len(ua) == 0 {
		t.Fatalf("history keeps a user agent of %d bytes, want a prefix of at most 160", len(ua))
	}
	if evs[0].Client.Addr != "10.0.0.1" {
		t.Fatalf("address %q, want 10.0.0.1", evs[0].Client.Addr)
	}
}

// A queue keeps its attributes in memory for its life; KmsMasterKeyId and
// RedriveAllowPolicy had no size bound but the request's, so 50 queues with
// 3 MiB values held 160 to 290 MB. KmsMasterKeyId is bounded as KMS bounds
// a key id (2,048 characters), RedriveAllowPolicy as Policy (8,192 bytes).
func TestFreeFormAttributesBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, _ := newEngine(t)
	ref := mkQueue(t, e, "q", nil)
	allow := func(pad int) string {
		return `{"redrivePermission":"allowAll","pad":"` + strings.Repeat("p", pad) + `"}`
	}
	for _, tc := range []struct {
		name, value string
		ok          bool
	}{
		{"KmsMasterKeyId", "alias/" + strings.Repeat("k", 2048-6), true},
		{"KmsMasterKeyId", "alias/" + strings.Repeat("k", 2048-5), false},
		{"KmsMasterKeyId", strings.Repeat("k", 3<<20), false},
		{"RedriveAllowPolicy", allow(8192 - len(allow(0))), true},
		{"RedriveAllowPolicy", allow(8193 - len(allow(0))), false},
		{"RedriveAllowPolicy", allow(3 << 20), false},
	} {
		err := e.SetQueueAttributes(ctx, ref, map[string]string{tc.name: tc.value})
		var be *baton.Error
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s of %d bytes: %v, want it accepted", tc.name, len(tc.value), err)
		case !tc.ok && (!errors.As(err, &be) || be.Code != baton.ErrInvalidAttributeValue):
			t.Errorf("%s of %d bytes: %v, want InvalidAttributeValue", tc.name, len(tc.value), err)
		}
		if _, err := e.CreateQueue(ctx, engine.CreateQueueParams{Account: ref.Account, Name: "c" + fmt.Sprint(len(tc.value)),
			Attributes: map[string]string{tc.name: tc.value}}); (err == nil) != tc.ok {
			t.Errorf("CreateQueue with %s of %d bytes: %v, accepted want %v", tc.name, len(tc.value), err, tc.ok)
		}
	}
}
