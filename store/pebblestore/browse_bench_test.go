package pebblestore_test

import (
	"testing"

	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/baton-sqs/baton/store/storetest"
)

// BenchmarkBrowseFirstPage measures the first page of a browse on a queue
// of a million messages (BATON_BENCH_MESSAGES), their bodies on disk:
//
//	go test -run '^$' -bench BenchmarkBrowseFirstPage ./store/pebblestore
func BenchmarkBrowseFirstPage(b *testing.B) {
	s, err := pebblestore.Open(b.Context(), b.TempDir(), pebblestore.Options{Durability: pebblestore.DurabilityRelaxed})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	storetest.BenchBrowse(b, s, storetest.BrowseBenchMessages(b))
}
