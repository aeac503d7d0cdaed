package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/pebblestore"
)

// fifoEngines are the engines the FIFO fixes are checked on: over the
// in-memory store and over the durable default.
var fifoEngines = []struct {
	name string
	open func(t *testing.T) (*engine.Engine, *clock.Fake)
}{
	{"memory", newEngine},
	{"embedded", func(t *testing.T) (*engine.Engine, *clock.Fake) {
		s, err := pebblestore.Open(t.Context(), t.TempDir(), pebblestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		clock := clock.NewFake(testutil.Epoch)
		e, err := engine.New(engine.Config{Store: s, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close) // before the store closes: cleanups run last first
		return e, clock
	}},
}

// A long poll of a FIFO queue whose only visible message waits behind its
// group's in-flight head answers as soon as the head is deleted (or
// deleted in a batch), not when its wait or the deleted lease would have
// ended: the delete is what makes the message receivable.
func TestFIFOLongPollWakesWhenHeadDeleted(t *testing.T) {
	t.Parallel()
	for _, batch := range []bool{false, true} {
		for _, st := range fifoEngines {
			t.Run(fmt.Sprintf("%s/batch=%v", st.name, batch), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				e, clock := st.open(t)
				ref := mkQueue(t, e, "q.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
				for _, body := range []string{"m1", "m2"} {
					if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: body, GroupID: "g"}); err != nil {
						t.Fatal(err)
					}
				}
				head, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{VisibilityTimeout: ptr(60)})
				if err != nil || len(head) != 1 || head[0].Body != "m1" {
					t.Fatalf("receive the head: got %v, %v; want m1", head, err)
				}
				done := make(chan []engine.ReceivedMessage, 1)
				go func() {
					got, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{WaitTimeSeconds: ptr(20)})
					if err != nil {
						t.Error(err)
					}
					done <- got
				}()
				testutil.CheckFor(t, 5*time.Second, func() error {
					if clock.Timers() == 0 {
						return fmt.Errorf("long poll not waiting")
					}
					return nil
				})
				if batch {
					_, failed, err := e.DeleteMessageBatch(ctx, ref, []engine.HandleEntry{{ID: "1", ReceiptHandle: head[0].ReceiptHandle}})
					if err != nil || len(failed) > 0 {
						t.Fatal(failed, err)
					}
				} else if err := e.DeleteMessage(ctx, ref, head[0].ReceiptHandle); err != nil {
					t.Fatal(err)
				}
				select {
				case got := <-done:
					if len(got) != 1 || got[0].Body != "m2" {
						t.Errorf("long poll after deleting the head: got %v, want m2", got)
					}
				case <-time.After(3 * time.Second):
					clock.Advance(21 * time.Second) // let the poll end
					got := <-done
					t.Errorf("long poll still waiting 3 s after the group's head was deleted (got %d messages once its wait ended)", len(got))
				}
			})
		}
	}
}
