package pgstore

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/pgtest"
)

// A server whose clock is seconds away from the database's is told so at
// start-up: every time in the store comes from the servers' clocks, and one
// ahead of the others ends their leases early. One in step says nothing.
func TestCheckClockWarnsOfSkew(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	s, err := Open(context.Background(), pgtest.MustDatabase(t), Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if strings.Contains(logs.String(), "clock") {
		t.Fatalf("a server in step with the database was warned:\n%s", logs.String())
	}
	s.checkClock(context.Background(), func() time.Time { return time.Now().Add(5 * time.Second) })
	if !strings.Contains(logs.String(), "this server's clock differs from the database's") || !strings.Contains(logs.String(), "skew=5") {
		t.Errorf("a server 5 s ahead was not warned:\n%s", logs.String())
	}
}
