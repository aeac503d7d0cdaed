package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/store/memstore"
)

// TestLongPollLimitPerAccessKey: behind a load balancer every connection
// comes from one address, so the long-poll bound is kept per access key:
// 150 long polls from one address, each signed with a key of its own, are
// all served under a bound of 50, while the 51st of one key is refused
// with RequestThrottled as before.
func TestLongPollLimitPerAccessKey(t *testing.T) {
	t.Parallel()
	const bound, keys = 50, 150
	srv := testutil.StartServer(t, testutil.Options{MaxLongPollsPerClient: bound})
	ctx := context.Background()
	u := srv.MustCreateQueue(t, "polls-by-key", nil)
	poll := &sqs.ReceiveMessageInput{QueueUrl: &u, WaitTimeSeconds: 20}
	errs := make(chan error, keys+bound)
	var wg sync.WaitGroup
	start := func(c *sqs.Client, who string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.ReceiveMessage(ctx, poll); err != nil {
				errs <- fmt.Errorf("%s: %w", who, err)
			}
		}()
	}
	for i := range keys {
		start(srv.ClientFor(fmt.Sprintf("AKIDPOLL%03d", i), "secret"), fmt.Sprintf("key %d", i))
	}
	same := srv.ClientFor("AKIDSAMEKEY", "secret")
	for i := range bound {
		start(same, fmt.Sprintf("same key, poll %d", i))
	}
	srv.WaitForTimers(t, keys+bound)
	_, err := same.ReceiveMessage(ctx, poll)
	wantAPIError(t, err, "RequestThrottled", 403)

	srv.Clock.Advance(20 * time.Second)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestTrustProxy: X-Forwarded-For names the client of an unsigned request
// only when the connection comes from a trusted proxy; from anyone else it
// is ignored, and the connection's address is the client.
func TestTrustProxy(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		trusted string
		// served[i] says whether the i-th poll, sent with X-Forwarded-For
		// forwarded[i], is served under a bound of one per client.
		forwarded []string
		served    []bool
	}{
		{"trusted", "127.0.0.1", []string{"192.0.2.1", "192.0.2.2", "198.51.100.7, 192.0.2.1", "192.0.2.1"},
			[]bool{true, true, false, false}},
		{"trusted prefix", "127.0.0.0/8, ::1", []string{"192.0.2.1", "192.0.2.2", "192.0.2.1"}, []bool{true, true, false}},
		{"untrusted", "192.0.2.200", []string{"192.0.2.1", "192.0.2.2"}, []bool{true, false}},
		{"none", "", []string{"192.0.2.1", "192.0.2.2"}, []bool{true, false}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			proxies, err := server.ParseTrustedProxies(tt.trusted)
			if err != nil {
				t.Fatal(err)
			}
			fake := clock.NewFake(testutil.Epoch)
			eng, err := engine.New(engine.Config{Store: memstore.New(), Clock: fake})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			hs := httptest.NewServer(server.New(server.Config{Engine: eng, MaxLongPollsPerClient: 1, TrustProxies: proxies}))
			defer hs.Close()
			if _, err := eng.CreateQueue(context.Background(), engine.CreateQueueParams{Account: "000000000000", Name: "q"}); err != nil {
				t.Fatal(err)
			}
			queueURL := hs.URL + "/000000000000/q"
			var wg sync.WaitGroup
			waiting := 0
			var served []func()
			for i, xff := range tt.forwarded {
				status := make(chan int, 1)
				wg.Add(1)
				go func() {
					defer wg.Done()
					status <- unsignedLongPoll(t, hs.URL, queueURL, xff)
				}()
				if !tt.served[i] {
					if got := <-status; got != http.StatusForbidden {
						t.Errorf("poll %d (X-Forwarded-For %q): status %d, want 403 RequestThrottled", i, xff, got)
					}
					continue
				}
				waiting++
				testutil.CheckFor(t, 10*time.Second, func() error {
					if n := fake.Timers(); n < waiting {
						return fmt.Errorf("poll %d (X-Forwarded-For %q) not waiting: %d timers, want %d", i, xff, n, waiting)
					}
					return nil
				})
				served = append(served, func() {
					if got := <-status; got != http.StatusOK {
						t.Errorf("poll %d (X-Forwarded-For %q): status %d, want 200", i, xff, got)
					}
				})
			}
			fake.Advance(20 * time.Second)
			wg.Wait()
			for _, check := range served {
				check()
			}
		})
	}
}

// unsignedLongPoll sends an unsigned 20-second ReceiveMessage with the given
// X-Forwarded-For header and returns the HTTP status.
func unsignedLongPoll(t *testing.T, base, queueURL, xff string) int {
	body := fmt.Sprintf(`{"QueueUrl":%q,"WaitTimeSeconds":20}`, queueURL)
	req, err := http.NewRequest(http.MethodPost, base+"/", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Error(err)
		return 0
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS.ReceiveMessage")
	req.Header.Set("X-Forwarded-For", xff)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestParseTrustedProxies: addresses and prefixes, with spaces; anything
// else is refused.
func TestParseTrustedProxies(t *testing.T) {
	t.Parallel()
	got, err := server.ParseTrustedProxies(" 10.0.0.5, 10.1.0.0/16 ,::1")
	if err != nil || len(got) != 3 || got[0].String() != "10.0.0.5/32" || got[1].String() != "10.1.0.0/16" || got[2].String() != "::1/128" {
		t.Errorf("got %v, %v", got, err)
	}
	if _, err := server.ParseTrustedProxies("10.0.0.5,proxy.example"); err == nil {
		t.Error("a host name was accepted")
	}
}
