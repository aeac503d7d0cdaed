package server_test

import (
	"context"
	"os"
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/memstore"
	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/baton-sqs/baton/store/pgstore"
)

// TestMain stops the PostgreSQL cluster that onEveryStore's tests share.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// onEveryStore runs test against a server on each store Baton ships: memory,
// embedded (a data directory of the test's own) and PostgreSQL (a database of
// its own on the test binary's cluster; without PostgreSQL the subtest
// skips, or fails under BATON_REQUIRE_POSTGRES=1). An answer of SQS that
// passes through what a store keeps (attribute values, names, system
// attributes, leases, regions) is pinned on all three.
func onEveryStore(t *testing.T, test func(t *testing.T, srv *testutil.Server)) {
	t.Helper()
	stores := []struct {
		name string
		open func(t *testing.T) baton.Store
	}{
		{"memory", func(*testing.T) baton.Store { return memstore.New() }},
		{"embedded", func(t *testing.T) baton.Store {
			s, err := pebblestore.Open(context.Background(), t.TempDir(), pebblestore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"postgres", func(t *testing.T) baton.Store {
			s, err := pgstore.Open(context.Background(), pgtest.MustDatabase(t), pgstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			test(t, testutil.StartServer(t, testutil.Options{Store: st.open(t)}))
		})
	}
}
