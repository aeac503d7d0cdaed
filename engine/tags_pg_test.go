package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/store/pgstore"
)

// TestTagQueueLimitAcrossNodes: nodes tagging one queue at once on
// PostgreSQL cannot pass the 50-tag limit together: of taggers that each
// add a tag to a queue of 49, one succeeds and the others are refused, and
// the queue has 50. Each node used to count the tags it read before it
// wrote, so several passed the limit together.
func TestTagQueueLimitAcrossNodes(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	ctx := context.Background()
	nodes := make([]*engine.Engine, 2)
	for i := range nodes {
		st, err := pgstore.Open(ctx, url, pgstore.Options{Logger: clusterLog})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		e, err := engine.New(engine.Config{Store: st, Logger: clusterLog})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		nodes[i] = e
	}
	tags := map[string]string{}
	for i := range 49 {
		tags[fmt.Sprintf("t%02d", i)] = "v"
	}
	const rounds, taggers = 4, 8
	for r := range rounds {
		ref := engine.QueueRef{Account: "000000000000", Name: fmt.Sprintf("tagged-%d", r)}
		if _, err := nodes[0].CreateQueue(ctx, engine.CreateQueueParams{Account: ref.Account, Name: ref.Name, Tags: tags}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, taggers)
		start := make(chan struct{})
		for i := range taggers {
			wg.Go(func() {
				<-start
				errs[i] = nodes[i%2].TagQueue(ctx, ref, map[string]string{fmt.Sprintf("new-%d", i): "v"})
			})
		}
		close(start)
		wg.Wait()
		passed := 0
		for i, err := range errs {
			var apiErr *baton.Error
			switch {
			case err == nil:
				passed++
			case !errors.As(err, &apiErr) || apiErr.Code != baton.ErrInvalidParameterValue:
				t.Errorf("round %d, tagger %d: %v; want a refusal of too many tags", r, i, err)
			}
		}
		got, err := nodes[1].ListQueueTags(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if passed != 1 || len(got) != 50 {
			t.Fatalf("round %d: %d of %d taggers passed, and the queue has %d tags; want 1 and 50", r, passed, taggers, len(got))
		}
	}
}
