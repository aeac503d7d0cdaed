package pgstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// TestQueueAttributesCached: the remembered decoding of stored queue
// attributes is the decoding, for attributes met before and new ones, past
// the cache's bound too; malformed attributes fail every time.
func TestQueueAttributesCached(t *testing.T) {
	t.Parallel()
	for i := range 2*queueAttributeCacheSize + 3 {
		a := baton.QueueAttributes{VisibilityTimeout: i % (queueAttributeCacheSize + 7), DelaySeconds: 3, Policy: fmt.Sprint("p", i%5)}
		raw := encodeQueueAttributes(a)
		for range 2 {
			got, err := decodeQueueAttributesCached(raw)
			if err != nil || got != a {
				t.Fatalf("entry %d: decoded %+v, %v; want %+v", i, got, err, a)
			}
		}
	}
	for range 2 {
		if _, err := decodeQueueAttributesCached([]byte(`{"visibility_timeout": "x"}`)); err == nil {
			t.Fatal("malformed attributes decoded without an error")
		}
	}
}

// fakeQueueRow is a queue's row as scanQueue reads it.
type fakeQueueRow struct{ attrs, tags []byte }

func (r fakeQueueRow) Scan(dest ...any) error {
	*dest[0].(*int64) = 42
	*dest[1].(*string), *dest[2].(*string), *dest[3].(*string) = "us-east-1", "000000000000", "bench"
	*dest[4].(*[]byte), *dest[5].(*[]byte) = r.attrs, r.tags
	*dest[6].(*time.Time), *dest[7].(*time.Time) = time.Unix(1, 0), time.Unix(2, 0)
	return nil
}

// BenchmarkScanQueue is what reading a queue's row costs this side, past
// the round trip: every request pays it (QueueGet).
func BenchmarkScanQueue(b *testing.B) {
	row := fakeQueueRow{
		attrs: encodeQueueAttributes(baton.QueueAttributes{DelaySeconds: 0, MaximumMessageSize: 262144,
			MessageRetentionPeriod: 345600, VisibilityTimeout: 30, SqsManagedSseEnabled: true}),
		tags: []byte(`{}`),
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := scanQueue(row); err != nil {
			b.Fatal(err)
		}
	}
}
