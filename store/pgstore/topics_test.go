package pgstore_test

import (
	"context"
	"testing"

	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/store/pgstore"
	"github.com/baton-sqs/baton/store/storetest"
)

func TestTopics(t *testing.T) {
	t.Parallel()
	storetest.RunTopics(t, func(t *testing.T) storetest.TopicsStore {
		s, err := pgstore.Open(context.Background(), pgtest.MustDatabase(t)+"&pool_max_conns=4", quiet)
		if err != nil {
			t.Fatal(err)
		}
		return s // RunTopics closes it
	})
}
