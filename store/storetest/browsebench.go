package storetest

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// BrowseBenchMessages is how many messages BenchBrowse queues: a million,
// or BATON_BENCH_MESSAGES.
func BrowseBenchMessages(b *testing.B) int {
	n := 1_000_000
	if v := os.Getenv("BATON_BENCH_MESSAGES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("BATON_BENCH_MESSAGES=%q: want a positive count", v)
		}
	}
	return n
}

// HeapInUse collects garbage and returns the heap's live bytes: what a
// benchmark reads before and after building a store to tell its size.
func HeapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchBrowse measures the first page (50 messages) of MessageBrowse on a
// queue of n messages of 100 bytes, one sent a microsecond, of which the
// oldest hundredth is in flight: newest first, oldest first, the in-flight
// ones only, and those whose body holds a rare substring. Each
// sub-benchmark reports ms/page.
func BenchBrowse(b *testing.B, s baton.Store, n int) {
	q := NewQueue(QueueID(1), "backlog")
	MustCreateQueue(b, s, q)
	start := time.Now()
	fillBrowse(b, s, q.ID, n)
	now := base.Add(time.Duration(n) * time.Microsecond)
	// Receives take the oldest first: the in-flight messages are the
	// oldest hundredth, which a newest-first page must pass over.
	for inFlight := 0; inFlight < n/100; {
		got := MustReceive(b, s, baton.MessageReceiveParams{QueueID: q.ID, Now: now, Max: baton.MaxBatchEntries, VisibleAt: now.Add(time.Hour)})
		if len(got) == 0 {
			break
		}
		inFlight += len(got)
	}
	b.Logf("%d messages queued in %v", n, time.Since(start).Round(time.Millisecond))
	for _, tc := range []struct {
		name string
		p    baton.MessageBrowseParams
	}{
		{"newest", baton.MessageBrowseParams{Newest: true}},
		{"oldest", baton.MessageBrowseParams{}},
		{"inflight", baton.MessageBrowseParams{Newest: true, States: baton.StateInFlight}},
		{"contains", baton.MessageBrowseParams{Newest: true, BodyContains: "needle"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := tc.p
			p.QueueID, p.Now, p.Limit = q.ID, now, 50
			var took time.Duration
			for b.Loop() {
				t0 := time.Now()
				page := MustBrowse(b, s, p)
				took += time.Since(t0)
				if len(page.Messages) == 0 {
					b.Fatal("empty first page")
				}
			}
			b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "ms/page")
		})
	}
}

// fillBrowse sends n messages from four goroutines, a thousand a call;
// one in ten thousand holds "needle".
func fillBrowse(b *testing.B, s baton.Store, queueID uint64, n int) {
	filler := strings.Repeat("x", 90)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				from := int(next.Add(1000) - 1000)
				if from >= n || b.Failed() {
					return
				}
				p := baton.MessageSendParams{QueueID: queueID}
				for i := from; i < min(from+1000, n); i++ {
					body := fmt.Sprintf("%09d %s", i, filler)
					if i%10000 == 5000 {
						body = fmt.Sprintf("%09d needle %s", i, filler[:83])
					}
					sent := base.Add(time.Duration(i) * time.Microsecond)
					p.Messages = append(p.Messages, &baton.Message{ID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), Body: body,
						SenderID: Account, SentAt: sent, VisibleAt: sent})
				}
				if _, err := s.MessageSend(b.Context(), p); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}
