package memstore_test

import (
	"testing"

	"github.com/baton-sqs/baton/store/memstore"
	"github.com/baton-sqs/baton/store/storetest"
)

// BenchmarkBrowseFirstPage measures the first page of a browse on a queue
// of a million messages (BATON_BENCH_MESSAGES):
//
//	go test -run '^$' -bench BenchmarkBrowseFirstPage ./store/memstore
func BenchmarkBrowseFirstPage(b *testing.B) {
	storetest.BenchBrowse(b, memstore.New(), storetest.BrowseBenchMessages(b))
}
