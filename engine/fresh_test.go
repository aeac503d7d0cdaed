package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/store/memstore"
)

// keepingStore answers QueueGet with the queue as it first read it, as a
// store shared by several servers may for a moment (baton.Store), unless
// the context is marked by baton.Fresh.
type keepingStore struct {
	baton.Store
	mu   sync.Mutex
	kept map[string]*baton.Queue
}

// keepingEngine is an engine on a memstore that keeps the queues' rows as
// a store shared by several servers may (keepingStore).
func keepingEngine(t *testing.T) (*engine.Engine, *keepingStore) {
	t.Helper()
	s := &keepingStore{Store: memstore.New(), kept: map[string]*baton.Queue{}}
	e, err := engine.New(engine.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, s
}

func (s *keepingStore) QueueGet(ctx context.Context, region, account, name string) (*baton.Queue, error) {
	if baton.IsFresh(ctx) {
		return s.Store.QueueGet(ctx, region, account, name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := region + " " + account + " " + name
	if q, ok := s.kept[key]; ok {
		c := *q
		return &c, nil
	}
	q, err := s.Store.QueueGet(ctx, region, account, name)
	if err == nil {
		c := *q
		s.kept[key] = &c
	}
	return q, err
}

// TestChangesReadTheQueueAsItStands: the actions that write back what
// they read of a queue read it as it stands, so that a change another
// server made a moment before, which this server's store may not have
// seen yet, is not undone.
func TestChangesReadTheQueueAsItStands(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e, s := keepingEngine(t)
	ref := engine.QueueRef{Account: "000000000000", Name: "shared"}
	if _, err := e.CreateQueue(ctx, engine.CreateQueueParams{Account: ref.Account, Name: ref.Name}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.GetQueueAttributes(ctx, ref, []string{"All"}); err != nil { // the store keeps the row
		t.Fatal(err)
	}
	// Another server's change, through the store beneath.
	elsewhere := func(attrs baton.QueueAttributes, tags map[string]string) {
		t.Helper()
		if _, err := s.Store.QueueUpdate(ctx, baton.QueueUpdateParams{Region: "us-east-1", Account: ref.Account, Name: ref.Name,
			Attributes: &attrs, TagsSet: tags}); err != nil {
			t.Fatal(err)
		}
	}
	stored := func() *baton.Queue {
		t.Helper()
		q, err := s.Store.QueueGet(ctx, "us-east-1", ref.Account, ref.Name)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	base := stored().Attributes

	a := base
	a.DelaySeconds = 5
	elsewhere(a, nil)
	if err := e.SetQueueAttributes(ctx, ref, map[string]string{"VisibilityTimeout": "45"}); err != nil {
		t.Fatal(err)
	}
	if got := stored().Attributes; got.DelaySeconds != 5 || got.VisibilityTimeout != 45 {
		t.Errorf("SetQueueAttributes: DelaySeconds %d, VisibilityTimeout %d; want 5 (set elsewhere) and 45", got.DelaySeconds, got.VisibilityTimeout)
	}

	a = stored().Attributes
	a.MaximumMessageSize = 2048
	elsewhere(a, nil)
	if err := e.AddPermission(ctx, ref, engine.AddPermissionParams{Label: "l", AccountIDs: []string{"111111111111"}, Actions: []string{"SendMessage"}}); err != nil {
		t.Fatal(err)
	}
	if got := stored().Attributes; got.MaximumMessageSize != 2048 || got.Policy == "" {
		t.Errorf("AddPermission: MaximumMessageSize %d, Policy %q; want 2048 (set elsewhere) and a policy", got.MaximumMessageSize, got.Policy)
	}

	a = stored().Attributes
	a.DelaySeconds = 7
	elsewhere(a, nil)
	if err := e.RemovePermission(ctx, ref, "l"); err != nil {
		t.Fatal(err)
	}
	if got := stored().Attributes; got.DelaySeconds != 7 || got.Policy != "" {
		t.Errorf("RemovePermission: DelaySeconds %d, Policy %q; want 7 (set elsewhere) and none", got.DelaySeconds, got.Policy)
	}

	// 50 tags is the limit: 49 set elsewhere leave room for one more.
	tags := map[string]string{}
	for i := range 49 {
		tags[string(rune('a'+i/26))+string(rune('a'+i%26))] = "v"
	}
	elsewhere(stored().Attributes, tags)
	err := e.TagQueue(ctx, ref, map[string]string{"x1": "v", "x2": "v"})
	if be := baton.AsError(err); be == nil {
		t.Errorf("TagQueue past 50 tags with 49 set elsewhere: %v, want refused", err)
	}

	// CreateQueue compares with the queue as it stands.
	_, err = e.CreateQueue(ctx, engine.CreateQueueParams{Account: ref.Account, Name: ref.Name, Attributes: map[string]string{"DelaySeconds": "7"}})
	if err != nil {
		t.Errorf("CreateQueue with the attributes set elsewhere: %v, want the queue", err)
	}
}

// TestDeadLetterQueueReadAsItStands: a receive that moves a message to the
// dead-letter queue reads that queue as it stands: one deleted elsewhere a
// moment before leaves the message delivered, as if there were no policy,
// rather than failing the receive.
func TestDeadLetterQueueReadAsItStands(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e, s := keepingEngine(t)
	dlq := engine.QueueRef{Account: "000000000000", Name: "dead"}
	src := engine.QueueRef{Account: "000000000000", Name: "work"}
	if _, err := e.CreateQueue(ctx, engine.CreateQueueParams{Account: dlq.Account, Name: dlq.Name}); err != nil {
		t.Fatal(err)
	}
	policy := `{"deadLetterTargetArn":"` + e.ARN(dlq.Account, dlq.Name) + `","maxReceiveCount":1}`
	if _, err := e.CreateQueue(ctx, engine.CreateQueueParams{Account: src.Account, Name: src.Name,
		Attributes: map[string]string{"RedrivePolicy": policy}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.GetQueueAttributes(ctx, dlq, []string{"QueueArn"}); err != nil { // the store keeps the row
		t.Fatal(err)
	}
	if _, err := e.SendMessage(ctx, src, engine.SendParams{Body: "twice"}); err != nil {
		t.Fatal(err)
	}
	zero := 0
	if got, err := e.ReceiveMessage(ctx, src, engine.ReceiveParams{VisibilityTimeout: &zero}); err != nil || len(got) != 1 {
		t.Fatalf("first receive: %d messages, %v", len(got), err)
	}
	if err := s.Store.QueueDelete(ctx, "us-east-1", dlq.Account, dlq.Name, time.Now()); err != nil { // elsewhere
		t.Fatal(err)
	}
	got, err := e.ReceiveMessage(ctx, src, engine.ReceiveParams{VisibilityTimeout: &zero})
	if err != nil || len(got) != 1 {
		t.Errorf("second receive, past maxReceiveCount with the dead-letter queue deleted elsewhere: %d messages, %v; want the message", len(got), err)
	}
}
