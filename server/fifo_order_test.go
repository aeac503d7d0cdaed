package server_test

import (
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
)

// How FIFO groups are ordered against each other, as SQS answered each case
// when LocalStack recorded it against AWS (tests/aws/services/sqs/
// test_sqs.py, the test named with each case): the group whose first
// receivable message has waited longest comes first (baton.Store's
// MessageReceive). Pinned on every store, and on two nodes of one store
// with each call made to the next node in turn.

// fifoNodes is what a case runs on: one or more nodes of one store, a clock
// they share and the node of each call, in turn.
type fifoNodes struct {
	clients []*sqs.Client
	advance func(time.Duration)
	turn    int
}

func (n *fifoNodes) next() *sqs.Client {
	c := n.clients[n.turn%len(n.clients)]
	n.turn++
	return c
}

func (n *fifoNodes) send(t *testing.T, url string, msgs ...string) {
	t.Helper()
	for _, m := range msgs {
		group := m[:2]
		sendFIFO(t, n.next(), url, m, group, "")
	}
}

// receive receives up to max messages under the queue's visibility
// timeout (the SDK does not send a VisibilityTimeout of 0) and returns
// them; their bodies must be want.
func (n *fifoNodes) receive(t *testing.T, url string, max int32, want ...string) []types.Message {
	t.Helper()
	out, err := n.next().ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: max})
	if err != nil {
		t.Fatalf("receive %d: %v", max, err)
	}
	if got := bodies(out.Messages); !slices.Equal(got, want) {
		t.Fatalf("receive %d: got %v, want %v in this order", max, got, want)
	}
	return out.Messages
}

var fifoOrderCases = []struct {
	name string
	// visibility is the queue's VisibilityTimeout, in seconds.
	visibility string
	run        func(t *testing.T, n *fifoNodes, url string)
}{
	{"test_fifo_receive_message_with_zero_visibility_timeout", "0", func(t *testing.T, n *fifoNodes, url string) {
		n.send(t, url, "g1-m1", "g2-m1", "g2-m2", "g3-m1", "g1-m2")
		n.advance(time.Second)
		n.receive(t, url, 3, "g1-m1", "g1-m2", "g2-m1")
		n.receive(t, url, 10, "g3-m1", "g1-m1", "g1-m2", "g2-m1", "g2-m2")
	}},
	{"test_fifo_message_group_visibility", "30", func(t *testing.T, n *fifoNodes, url string) {
		n.send(t, url, "g1-m1", "g1-m2", "g1-m3", "g1-m4", "g2-m1", "g3-m1")
		n.receive(t, url, 2, "g1-m1", "g1-m2")
		n.advance(time.Second)
		n.receive(t, url, 1, "g2-m1")
		n.advance(31 * time.Second) // both leases lapse, g1's first
		n.receive(t, url, 10, "g3-m1", "g1-m1", "g1-m2", "g1-m3", "g1-m4", "g2-m1")
	}},
	{"test_fifo_message_group_visibility_after_terminate_visibility_timeout", "30", func(t *testing.T, n *fifoNodes, url string) {
		n.send(t, url, "g1-m1", "g1-m2", "g2-m1")
		// The receipt goes back to the node that gave it out: nodes of
		// the tests' servers do not share a receipt key.
		c := n.clients[n.turn%len(n.clients)]
		got := n.receive(t, url, 2, "g1-m1", "g1-m2")
		n.advance(time.Second)
		if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: &url, ReceiptHandle: got[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
			t.Fatal(err)
		}
		n.receive(t, url, 3, "g2-m1", "g1-m1")
	}},
	{"test_fifo_message_group_visibility_after_delete", "30", func(t *testing.T, n *fifoNodes, url string) {
		n.send(t, url, "g1-m1", "g2-m1", "g1-m2", "g2-m2", "g1-m2", "g1-m3", "g1-m4", "g3-m1")
		c := n.clients[n.turn%len(n.clients)]
		got := n.receive(t, url, 2, "g1-m1", "g1-m2")
		n.advance(time.Second)
		for _, m := range got {
			if err := deleteMessage(c, url, m.ReceiptHandle); err != nil {
				t.Fatal(err)
			}
		}
		n.receive(t, url, 10, "g2-m1", "g2-m2", "g1-m3", "g1-m4", "g3-m1")
	}},
	// Not a recorded case: a group whose head's lease keeps lapsing waits
	// behind the others each time instead of coming first on every receive.
	{"failing head waits its turn", "30", func(t *testing.T, n *fifoNodes, url string) {
		n.send(t, url, "g1-m1", "g2-m1", "g3-m1")
		for _, want := range []string{"g1-m1", "g2-m1", "g3-m1", "g1-m1"} {
			n.advance(time.Second)
			n.receive(t, url, 1, want)
			n.advance(30 * time.Second)
		}
	}},
}

// runFIFOOrderCases runs every case on a queue of its own.
func runFIFOOrderCases(t *testing.T, n *fifoNodes) {
	for i, c := range fifoOrderCases {
		t.Run(c.name, func(t *testing.T) {
			out, err := n.clients[0].CreateQueue(ctx, &sqs.CreateQueueInput{
				QueueName:  new("order-" + string(rune('a'+i)) + ".fifo"),
				Attributes: fifoAttrs("ContentBasedDeduplication", "true", "VisibilityTimeout", c.visibility),
			})
			if err != nil {
				t.Fatal(err)
			}
			c.run(t, n, *out.QueueUrl)
		})
	}
}

func TestFIFOGroupsWaitingLongestFirst(t *testing.T) {
	onEveryStore(t, func(t *testing.T, srv *testutil.Server) {
		runFIFOOrderCases(t, &fifoNodes{clients: []*sqs.Client{srv.Client}, advance: srv.Clock.Advance})
	})
}

// TestFIFOGroupsWaitingLongestFirstTwoNodes runs the cases on two nodes of
// one store: handles of a memstore.Cluster, and two PostgreSQL stores on
// one database.
func TestFIFOGroupsWaitingLongestFirstTwoNodes(t *testing.T) {
	onTwoNodes(t, func(t *testing.T, a, b baton.Store) {
		runFIFOOrderCases(t, startFIFONodes(t, a, b))
	})
}

// startFIFONodes starts a server on each store, all on one fake clock, on
// 127.0.0.1 ports of their own, and stops them when the test ends.
func startFIFONodes(t *testing.T, stores ...baton.Store) *fifoNodes {
	t.Helper()
	clk := clock.NewFake(testutil.Epoch)
	n := &fifoNodes{advance: clk.Advance}
	for _, s := range stores {
		eng, err := engine.New(engine.Config{Store: s, Clock: clk, Region: batontest.Region})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(server.New(server.Config{Engine: eng, Account: testutil.Account}))
		t.Cleanup(func() {
			hs.Close()
			eng.Close()
			s.Close()
		})
		n.clients = append(n.clients, testutil.NewClient(hs.URL))
	}
	return n
}

// TestFIFOGroupsWaitingLongestFirstQuery: the recorded zero-visibility case
// over the Query protocol, which sends the receive's VisibilityTimeout of 0
// itself, as the recorded test did.
func TestFIFOGroupsWaitingLongestFirstQuery(t *testing.T) {
	onEveryStore(t, func(t *testing.T, srv *testutil.Server) {
		q := queryClient{tb: t, srv: srv}
		url := q.createQueue("order-query.fifo", "Attribute.1.Name", "FifoQueue", "Attribute.1.Value", "true",
			"Attribute.2.Name", "ContentBasedDeduplication", "Attribute.2.Value", "true")
		for _, b := range []string{"g1-m1", "g2-m1", "g2-m2", "g3-m1", "g1-m2"} {
			q.send(url, b, "MessageGroupId", b[:2])
		}
		srv.Clock.Advance(time.Second)
		receive := func(max string, want ...string) {
			t.Helper()
			var got []string
			for _, m := range q.receive(url, "MaxNumberOfMessages", max, "VisibilityTimeout", "0") {
				got = append(got, m.child(t, "Body").Text)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("receive %s, visibility 0: got %v, want %v in this order", max, got, want)
			}
		}
		receive("3", "g1-m1", "g1-m2", "g2-m1")
		receive("10", "g3-m1", "g1-m1", "g1-m2", "g2-m1", "g2-m2")
	})
}
