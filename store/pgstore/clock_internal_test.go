package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
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
	s, err := Open(context.Background(), pgtest.MustDatabase(t), Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if strings.Contains(logs.String(), "clock") {
		t.Fatalf("a server in step with the database was warned:\n%s", logs.String())
	}
	logs.Reset()
	s.checkClock(context.Background(), func() time.Time { return time.Now().Add(5 * time.Second) })
	// The measured skew is 5 s give or take the round trip to the
	// database, which a busy machine can stretch: compare it as a number.
	var rec struct {
		Msg  string `json:"msg"`
		Skew string `json:"skew"`
	}
	if err := json.Unmarshal(logs.Bytes(), &rec); err != nil {
		t.Fatalf("a server 5 s ahead logged no single warning: %v\n%s", err, logs.String())
	}
	skew, err := time.ParseDuration(rec.Skew)
	if !strings.Contains(rec.Msg, "this server's clock differs from the database's") || err != nil || skew < 4*time.Second || skew > 6*time.Second {
		t.Errorf("a server 5 s ahead: warning %q with skew %q (%v); want the clock warning with a skew near 5s", rec.Msg, rec.Skew, err)
	}
}

// ClockOffset measures a server clock 45 s ahead of the database's as an
// offset near -45 s, and one in step as near 0.
func TestClockOffset(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), pgtest.MustDatabase(t), Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	off, err := s.ClockOffset(ctx, time.Now)
	if err != nil || off.Abs() > 2*time.Second {
		t.Errorf("offset of a clock in step: %v, %v; want near 0", off, err)
	}
	off, err = s.ClockOffset(ctx, func() time.Time { return time.Now().Add(45 * time.Second) })
	if err != nil || off > -43*time.Second || off < -47*time.Second {
		t.Errorf("offset of a clock 45 s ahead: %v, %v; want near -45s", off, err)
	}
}
