package pgstore

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/pgtest"
)

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
