package bench

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"
)

// The client's own cost per request: signing, and a whole call to the echo
// ceiling. BenchmarkSign signs at a new second each time, so nothing is
// reused but the day's key; BenchmarkSignCached is the usual case of a
// request sent again within its second.

var benchCreds = &Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}

func benchClient(b *testing.B, endpoint string, now func() time.Time) *Client {
	b.Helper()
	c, err := NewClient(ClientConfig{Endpoint: endpoint, Region: "us-west-2", Credentials: benchCreds, NowFunc: now})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c
}

func BenchmarkSign(b *testing.B) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	c := benchClient(b, "http://127.0.0.1:1/000000000000/q", nil)
	r := c.NewRequest("SendMessage", []byte(`{"QueueUrl":"http://127.0.0.1:1/000000000000/q","MessageBody":"x"}`))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if s, err := c.signed(r, t0.Add(time.Duration(i%3600)*time.Second)); err != nil || s.auth[0] == "" {
			b.Fatal("no Authorization")
		}
	}
}

func BenchmarkSignCached(b *testing.B) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	c := benchClient(b, "http://127.0.0.1:1/000000000000/q", nil)
	r := c.NewRequest("SendMessage", []byte(`{"QueueUrl":"http://127.0.0.1:1/000000000000/q","MessageBody":"x"}`))
	b.ReportAllocs()
	for b.Loop() {
		if s, err := c.signed(r, t0); err != nil || s.auth[0] == "" {
			b.Fatal("no Authorization")
		}
	}
}

func BenchmarkCallerDo(b *testing.B) {
	srv := httptest.NewServer(NewEcho(64))
	b.Cleanup(srv.Close)
	c := benchClient(b, srv.URL, time.Now)
	r := c.NewRequest("SendMessage", []byte(`{"QueueUrl":"`+srv.URL+`/000000000000/q","MessageBody":"x"}`))
	k := c.NewCaller()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Do(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}
