package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// OldSchema brings the database at url to schema version upTo of the
// migrations in dir (store/pgstore/migrations, from the test's package),
// as an older Baton left it: each file up to upTo in one statement, and
// its record in baton_schema_migrations. With released0012, 0012 is as it
// was first written (released0012Indexes).
func OldSchema(t testing.TB, url, dir string, upTo int, released0012 bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations in %s: %v", dir, err)
	}
	sort.Strings(files)
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`CREATE TABLE baton_schema_migrations (version integer PRIMARY KEY, name text NOT NULL)`)
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".sql")
		num, _, _ := strings.Cut(base, "_")
		v, _ := strconv.Atoi(num)
		if v > upTo {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		exec(string(b))
		if v == 12 && released0012 {
			exec(released0012Indexes)
		}
		exec(`INSERT INTO baton_schema_migrations VALUES ($1, $2)`, v, base)
	}
}

// released0012Indexes is what migration 0012 of the PostgreSQL store did
// to the indexes of messages when it was first written, before 0013 took
// them over to build them concurrently: a database an older Baton
// migrated to schema 12 has the full index of states and no longer the
// two it replaced.
const released0012Indexes = `
	CREATE INDEX baton_messages_by_state ON baton_messages (queue_id, leased, visible_at, pos);
	DROP INDEX baton_messages_by_visible;
	DROP INDEX baton_messages_leased`
