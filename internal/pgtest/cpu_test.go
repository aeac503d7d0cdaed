package pgtest_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// TestCPUTimeCountsExitedBackends: the server's processor time grows by
// what a backend spends, and does not lose it when the backend exits.
func TestCPUTimeCountsExitedBackends(t *testing.T) {
	c := pgtest.MustStart(t)
	before, err := c.CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if err := conn.QueryRow(t.Context(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	// Some hundreds of milliseconds of work, far above the 10 ms the
	// kernel counts in.
	if _, err := conn.Exec(t.Context(), "SELECT count(*) FROM generate_series(1, 5000000)"); err != nil {
		t.Fatal(err)
	}
	during, err := c.CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	if during-before < 50*time.Millisecond {
		t.Fatalf("a backend's query of some hundreds of milliseconds added %v to the server's CPU time", during-before)
	}
	conn.Close(t.Context())
	// Gone from /proc: exited and reaped by the postmaster.
	poll.For(t, time.Minute, func() error {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			return fmt.Errorf("backend %d not reaped yet", pid)
		}
		return nil
	})
	after, err := c.CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	if after < during {
		t.Errorf("the server's CPU time fell from %v to %v when a backend exited", during, after)
	}
}
