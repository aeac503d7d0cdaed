package pgtest_test

import (
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestDatabasesAreSeparate checks that the shared cluster answers on its
// socket and that each test database starts empty.
func TestDatabasesAreSeparate(t *testing.T) {
	t.Parallel()
	first := pgtest.MustDatabase(t)
	second := pgtest.MustDatabase(t)
	if first == second {
		t.Fatalf("two databases share the URL %s", first)
	}
	conn, err := pgx.Connect(t.Context(), first)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), "CREATE TABLE t (x int)"); err != nil {
		t.Fatal(err)
	}
	other, err := pgx.Connect(t.Context(), second)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(t.Context())
	var n int
	if err := other.QueryRow(t.Context(), "SELECT count(*) FROM pg_tables WHERE tablename = 't'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("table t of one database seen in another: got %d, want 0", n)
	}
	var version string
	if err := conn.QueryRow(t.Context(), "SHOW server_version_num").Scan(&version); err != nil {
		t.Fatal(err)
	}
	t.Logf("server_version_num %s", version)
}
