package pebblestore_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/poll"
	"github.com/baton-sqs/baton/store/pebblestore"
)

// gatedFS is a file system whose files' syncs wait while gate is
// write-locked: a disk whose flushes stall.
type gatedFS struct {
	vfs.FS
	gate *sync.RWMutex
}

func (fs gatedFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	return gatedFile{f, fs.gate}, err
}

func (fs gatedFS) ReuseForWrite(old, name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(old, name, c)
	return gatedFile{f, fs.gate}, err
}

type gatedFile struct {
	vfs.File
	gate *sync.RWMutex
}

func (f gatedFile) Sync() error {
	f.gate.RLock()
	defer f.gate.RUnlock()
	return f.File.Sync()
}

// SyncData is how the write-ahead log syncs.
func (f gatedFile) SyncData() error {
	f.gate.RLock()
	defer f.gate.RUnlock()
	return f.File.SyncData()
}

// A receive whose client hangs up while its lease commits, as a consumer
// killed mid-receive does, leaves the doctor naming exactly the leases
// the store holds: the lease is either recorded or given back, never held
// unseen. Meanwhile the queue's in-flight count already shows it, before
// the receive has answered: a count of leases, not of leases delivered.
func TestReceiveCutOffMidCommitDoctorNamesWhatIsHeld(t *testing.T) {
	t.Parallel()
	gate := &sync.RWMutex{}
	clk := clock.NewFake(testutil.Epoch)
	log := slog.New(slog.DiscardHandler)
	// A write timeout no loaded machine reaches: the stall ends when the
	// test says.
	st, err := pebblestore.Open(t.Context(), plDir, pebblestore.Options{FS: gatedFS{FS: vfs.NewMem(), gate: gate}, WriteTimeout: time.Hour, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	eng, err := engine.New(engine.Config{Store: st, Clock: clk, ReceiptKey: plKey, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	bg := context.Background()
	ref := engine.QueueRef{Account: "000000000000", Name: "long-lease"}
	if _, err := eng.CreateQueue(bg, engine.CreateQueueParams{Account: ref.Account, Name: ref.Name,
		Attributes: map[string]string{"VisibilityTimeout": "43200"}}); err != nil {
		t.Fatal(err)
	}
	receive := func(ctx context.Context) []engine.ReceivedMessage {
		got, err := eng.ReceiveMessage(ctx, ref, engine.ReceiveParams{})
		if err != nil && ctx.Err() == nil {
			t.Error(err)
		}
		return got
	}
	send := func(body string) string {
		out, err := eng.SendMessage(bg, ref, engine.SendParams{Body: body})
		if err != nil {
			t.Fatal(err)
		}
		return out.MessageID
	}
	// Five quick leases: the p99.
	for i := range 5 {
		send("ok")
		got := receive(bg)
		if len(got) != 1 {
			t.Fatalf("quick lease %d: received %d messages", i, len(got))
		}
		clk.Advance(100 * time.Millisecond)
		if err := eng.DeleteMessage(bg, ref, got[0].ReceiptHandle); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		send("hang")
	}
	receive(bg)
	receive(bg)

	gate.Lock() // the disk stalls under the third receive's lease
	unstall := sync.OnceFunc(gate.Unlock)
	t.Cleanup(unstall)
	ctx, hangUp := context.WithCancel(bg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		receive(ctx)
	}()
	poll.For(t, 20*time.Second, func() error {
		return wantInFlight(eng, ref, 3)
	})
	select {
	case <-done:
		t.Fatal("the third receive answered while its lease could not commit")
	default:
	}
	hangUp()
	unstall()
	<-done

	clk.Advance(time.Minute)
	page, err := eng.BrowseMessages(bg, ref, engine.BrowseParams{States: baton.StateInFlight, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	for _, m := range page.Messages {
		held = append(held, m.ID)
	}
	rep, err := eng.LeaseReport(bg, ref)
	if err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, f := range rep.Findings {
		// Held by a holder that is gone or hung, or, the third, handed
		// out in the answer its client hung up on: held by no one.
		if f.Kind == ledger.DiagnosisHeldUnrenewed || f.Kind == ledger.DiagnosisClientLeft {
			for _, h := range f.Held {
				named = append(named, h.MessageID)
			}
		}
	}
	slices.Sort(held)
	slices.Sort(named)
	t.Logf("after the hang-up the store holds %d leases, the doctor names %d", len(held), len(named))
	if len(held) < 2 || !slices.Equal(named, held) {
		t.Errorf("the store holds %v, the doctor names %v held unrenewed or by no one (%s)", held, named, rep.Advice)
	}
}

// wantInFlight says how the queue's in-flight count differs from n.
func wantInFlight(eng *engine.Engine, ref engine.QueueRef, n int) error {
	attrs, err := eng.GetQueueAttributes(context.Background(), ref, []string{"ApproximateNumberOfMessagesNotVisible"})
	if err != nil {
		return err
	}
	if got := attrs["ApproximateNumberOfMessagesNotVisible"]; got != strconv.Itoa(n) {
		return fmt.Errorf("%s in flight, want %d", got, n)
	}
	return nil
}
