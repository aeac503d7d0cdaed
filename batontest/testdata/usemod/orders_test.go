package orders_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-sqs/baton/batontest"

	"example.com/orders"
)

// TestShipRetriesAfterLease: an order that fails to ship comes back once
// its visibility timeout has passed on the server's fake clock.
func TestShipRetriesAfterLease(t *testing.T) {
	srv := batontest.New(t, batontest.WithFakeClock(time.Time{}), batontest.WithCredentials("AKIDORDERS", "orders-secret"))
	queue := srv.Queue(t, "orders?VisibilityTimeout=60")
	ctx := context.Background()
	if err := orders.Place(ctx, srv.Client(), queue, "book"); err != nil {
		t.Fatal(err)
	}
	fail := func(string) error { return errors.New("the warehouse is closed") }
	if n, err := orders.Ship(ctx, srv.Client(), queue, fail); n != 0 || err != nil {
		t.Fatalf("shipped %d, %v; want 0", n, err)
	}
	ok := func(string) error { return nil }
	if n, err := orders.Ship(ctx, srv.Client(), queue, ok); n != 0 || err != nil {
		t.Fatalf("shipped %d, %v while the order is leased; want 0", n, err)
	}
	srv.Clock().Advance(time.Minute)
	if n, err := orders.Ship(ctx, srv.Client(), queue, ok); n != 1 || err != nil {
		t.Fatalf("shipped %d, %v after the lease; want 1", n, err)
	}
}
