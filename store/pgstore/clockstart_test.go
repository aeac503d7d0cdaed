package pgstore_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/store/pgstore"
)

// A server's start reads the database's clock as Open waits for the
// database: a reading the database is unavailable for (here, every one
// whose connection a proxy cuts) is made again, with a log line each time,
// until it succeeds or the connect timeout passes, and then the error says
// so.
func TestAwaitClockOffset(t *testing.T) {
	t.Parallel()
	db := pgtest.MustDatabase(t)
	for _, tt := range []struct {
		name    string
		timeout time.Duration
		recover bool // the proxy stops cutting once a retry is logged
	}{
		{"recovers", 30 * time.Second, true},
		{"gives up", 2 * time.Second, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			proxy, url := startCutProxy(t, db)
			logs := &logbuf.Buffer{}
			s, err := pgstore.Open(context.Background(), url, pgstore.Options{Logger: slog.New(slog.NewTextHandler(logs, nil)),
				ConnectTimeout: tt.timeout, RetryFor: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			proxy.cutOn("clock_timestamp")
			if tt.recover {
				go func() {
					poll := time.NewTicker(20 * time.Millisecond)
					defer poll.Stop()
					for range poll.C {
						if strings.Contains(logs.String(), "could not read the database's clock, retrying") {
							proxy.stopCutting()
							return
						}
					}
				}()
			}
			off, err := s.AwaitClockOffset(context.Background(), time.Now)
			if !tt.recover {
				if err == nil || !strings.Contains(err.Error(), "cannot read the clock of PostgreSQL") || !strings.Contains(err.Error(), "gave up after") {
					t.Fatalf("AwaitClockOffset through connections always cut: %v, %v; want it to give up and say so", off, err)
				}
				t.Logf("AwaitClockOffset: %v", err)
				return
			}
			if err != nil || off.Abs() > 2*time.Second {
				t.Fatalf("AwaitClockOffset: %v, %v; want an offset near 0\n%s", off, err, logs)
			}
			testutil.CheckFor(t, 5*time.Second, func() error {
				if !strings.Contains(logs.String(), `msg="read the database's clock"`) {
					return errors.New("the successful retry is not logged")
				}
				return nil
			})
		})
	}
}
