package pebblestore

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/bench"
)

// BenchmarkCompactionScheduler sends and deletes b.N messages (1 or 8 KiB, in
// batches of ten, by eight workers, over a backlog of 20,000) with the
// pacer and with Pebble's own scheduler, and reports by counts how each
// kept the log's shape: compactions by kind, the tables and sublevels of
// level 0 at the end and the most sampled every 200 batches, the write
// stalls, and the process's CPU per message. Run the two in alternating
// pairs (-bench .../scheduler=pacer$, then =pebble$, and so on):
//
//	go test -run '^$' -bench BenchmarkCompactionScheduler -benchtime 200000x ./store/pebblestore
func BenchmarkCompactionScheduler(b *testing.B) {
	for _, size := range []int{1, 8} {
		for _, sc := range []struct {
			name  string
			pebbl bool
		}{{"pacer", false}, {"pebble", true}} {
			b.Run(fmt.Sprintf("body=%dKiB/scheduler=%s", size, sc.name), func(b *testing.B) { benchScheduler(b, size<<10, sc.pebbl) })
		}
	}
}

func benchScheduler(b *testing.B, size int, pebbleScheduler bool) {
	stalls := &stallCounter{}
	s, err := Open(b.Context(), b.TempDir(), Options{Durability: DurabilityRelaxed, Logger: slog.New(stalls), pebbleScheduler: pebbleScheduler})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	e, err := engine.New(engine.Config{Store: s})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ctx := b.Context()
	ref := engine.QueueRef{Account: "000000000000", Name: "churn"}
	if _, err := e.CreateQueue(ctx, engine.CreateQueueParams{Account: ref.Account, Name: ref.Name}); err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("c", size)
	send := func() error {
		entries := make([]engine.SendParams, 10)
		for i := range entries {
			entries[i] = engine.SendParams{ID: strconv.Itoa(i), Body: body}
		}
		_, _, err := e.SendMessageBatch(ctx, ref, entries)
		return err
	}
	for range 2000 {
		if err := send(); err != nil {
			b.Fatal(err)
		}
	}
	var maxL0, maxSub atomic.Int64
	sample := func() {
		m := s.db.Metrics()
		maxL0.Store(max(maxL0.Load(), m.Levels[0].TablesCount))
		maxSub.Store(max(maxSub.Load(), int64(m.Levels[0].Sublevels)))
	}
	before := s.db.Metrics()
	cpu := bench.ProcessCPU()
	deadline := time.Now().Add(10 * time.Minute)
	batches := int64(b.N+9) / 10
	var next atomic.Int64
	var failed atomic.Value
	b.ResetTimer()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				n := next.Add(1)
				if n > batches || time.Now().After(deadline) {
					return
				}
				if err := churnOnce(ctx, e, ref, send); err != nil {
					failed.Store(err)
					return
				}
				if n%200 == 0 {
					sample()
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	if next.Load() <= batches {
		b.Fatalf("ran out of time after %d of %d batches", next.Load(), batches)
	}
	used := bench.ProcessCPU() - cpu
	sample()
	m := s.db.Metrics()
	c, c0 := m.Compact, before.Compact
	b.ReportMetric(float64(c.Count-c0.Count), "compactions")
	b.ReportMetric(float64(c.DefaultCount-c0.DefaultCount), "default")
	b.ReportMetric(float64(c.MoveCount-c0.MoveCount), "move")
	b.ReportMetric(float64(c.DeleteOnlyCount-c0.DeleteOnlyCount), "deleteonly")
	b.ReportMetric(float64(c.ElisionOnlyCount-c0.ElisionOnlyCount), "elision")
	b.ReportMetric(float64(c.TombstoneDensityCount-c0.TombstoneDensityCount), "tombstone")
	b.ReportMetric(float64(c.MultiLevelCount-c0.MultiLevelCount), "multilevel")
	b.ReportMetric(float64(m.Flush.Count-before.Flush.Count), "flushes")
	b.ReportMetric(float64(m.Levels[0].TablesCount), "L0-end")
	b.ReportMetric(float64(m.Levels[0].Sublevels), "L0sub-end")
	b.ReportMetric(float64(maxL0.Load()), "L0-max")
	b.ReportMetric(float64(maxSub.Load()), "L0sub-max")
	b.ReportMetric(float64(m.ReadAmp()), "readamp-end")
	b.ReportMetric(float64(stalls.count.Load()), "stalls")
	b.ReportMetric(float64(time.Duration(stalls.held.Load()).Milliseconds()), "stall-ms")
	b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-µs/msg")
}

// churnOnce sends ten messages, then receives up to ten and deletes them.
func churnOnce(ctx context.Context, e *engine.Engine, ref engine.QueueRef, send func() error) error {
	if err := send(); err != nil {
		return err
	}
	max, wait := 10, 0
	msgs, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{MaxNumberOfMessages: &max, WaitTimeSeconds: &wait})
	if err != nil || len(msgs) == 0 {
		return err
	}
	entries := make([]engine.HandleEntry, len(msgs))
	for i, m := range msgs {
		entries[i] = engine.HandleEntry{ID: strconv.Itoa(i), ReceiptHandle: m.ReceiptHandle}
	}
	_, _, err = e.DeleteMessageBatch(ctx, ref, entries)
	return err
}

// stallCounter is a log handler counting the write stalls the store logs
// (stallListener) and the time they held writes.
type stallCounter struct {
	count, held atomic.Int64
}

func (*stallCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *stallCounter) Handle(_ context.Context, r slog.Record) error {
	switch {
	case strings.HasPrefix(r.Message, "pebblestore: writes held back"):
		c.count.Add(1)
	case strings.HasPrefix(r.Message, "pebblestore: writes go on"):
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "held" {
				if d, ok := a.Value.Any().(time.Duration); ok {
					c.held.Add(int64(d))
				}
			}
			return true
		})
	}
	return nil
}
func (c *stallCounter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *stallCounter) WithGroup(string) slog.Handler      { return c }
