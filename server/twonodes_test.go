package server_test

import (
	"context"
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/store/memstore"
	"github.com/baton-sqs/baton/store/pgstore"
)

// onTwoNodes runs fn, in parallel subtests, on two stores several servers
// share as one: two handles of a memstore.Cluster, and two PostgreSQL
// stores of one database.
func onTwoNodes(t *testing.T, fn func(t *testing.T, a, b baton.Store)) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		c := memstore.NewCluster()
		fn(t, c.Open(), c.Open())
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url := pgtest.MustDatabase(t)
		var stores []baton.Store
		for range 2 {
			s, err := pgstore.Open(context.Background(), url, pgstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			stores = append(stores, s)
		}
		fn(t, stores[0], stores[1])
	})
}

// startNode starts a server on st, on a fake clock at batontest.Epoch,
// stopped when the test ends.
func startNode(t *testing.T, st baton.Store) *batontest.Server {
	t.Helper()
	srv, err := batontest.Start(batontest.WithStore(st), batontest.WithFakeClock(batontest.Epoch))
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}
