package memstore_test

import (
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/memstore"
	"github.com/baton-sqs/baton/store/storetest"
)

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) baton.Store { return memstore.New() })
}

// TestSharedHandleIsAStore: a handle on a Cluster is a whole store too.
func TestSharedHandleIsAStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) baton.Store { return memstore.NewCluster().Open() })
}

// TestShared runs the shared suite on two handles of one Cluster.
func TestShared(t *testing.T) {
	t.Parallel()
	storetest.RunShared(t, func(t *testing.T) (baton.SharedStore, baton.SharedStore) {
		c := memstore.NewCluster()
		return c.Open(), c.Open()
	})
}

func TestTopics(t *testing.T) {
	t.Parallel()
	storetest.RunTopics(t, func(t *testing.T) storetest.TopicsStore { return memstore.New() })
}
