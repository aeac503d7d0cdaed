package orders_test

import (
	"context"
	"fmt"
	"log"

	"github.com/baton-sqs/baton/batontest"

	"example.com/orders"
)

func ExampleShip() {
	srv, err := batontest.Start(batontest.WithEmbedded())
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	queue, err := srv.CreateQueue(ctx, "orders")
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range []string{"book", "lamp"} {
		if err := orders.Place(ctx, srv.Client(), queue, o); err != nil {
			log.Fatal(err)
		}
	}
	n, err := orders.Ship(ctx, srv.Client(), queue, func(string) error { return nil })
	fmt.Println(n, err)
	// Output: 2 <nil>
}
