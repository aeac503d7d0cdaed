package cli_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/baton-sqs/baton/store/pgstore"
)

// `baton store check` on an intact data directory exits 0; on a damaged
// one, 1 with the damage; `baton store salvage` copies the intact one with
// its receipt key.
func TestCLIStoreCheckAndSalvage(t *testing.T) {
	t.Parallel()
	dir := stoppedStore(t)
	if err := os.WriteFile(filepath.Join(dir, "receipt.key"), []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, cliEnv(t), nil, "store", "check", "--data-dir", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "no damage found") {
		t.Errorf("check of an intact directory: %+v", r)
	}
	to := filepath.Join(t.TempDir(), "copy")
	r = runCLI(t, cliEnv(t), nil, "store", "salvage", "--data-dir", dir, "--to", to)
	if r.code != 0 || !strings.Contains(r.stdout, "salvaged into "+to+": 0 queues, 0 messages; 0 messages lost") {
		t.Errorf("salvage: %+v", r)
	}
	if key, err := os.ReadFile(filepath.Join(to, "receipt.key")); err != nil || len(key) != 32 {
		t.Errorf("salvaged receipt key: %q, %v", key, err)
	}
	r = runCLI(t, cliEnv(t), nil, "store", "salvage", "--data-dir", dir, "--to", to)
	if r.code != 1 || !strings.Contains(r.stderr, "not empty") {
		t.Errorf("salvage into a used directory: %+v", r)
	}

	if err := os.WriteFile(filepath.Join(dir, pebblestore.MarkFile), []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, cliEnv(t), nil, "store", "check", "--data-dir", dir)
	if r.code != 1 || !strings.Contains(r.stdout, "damaged: ") || !strings.Contains(r.stderr, "the data directory is damaged") {
		t.Errorf("check of a damaged directory: %+v", r)
	}
}

// `baton store check` of a log Pebble cannot open (its MANIFEST deleted)
// read none of it: it says so rather than "0 queues, 0 messages" intact,
// and does not send the operator to salvage, which has nothing to copy.
func TestCLIStoreCheckOfALogThatCannotOpen(t *testing.T) {
	t.Parallel()
	dir := stoppedStore(t)
	manifests, err := filepath.Glob(filepath.Join(dir, pebblestore.LogDir, "MANIFEST-*"))
	if err != nil || len(manifests) == 0 {
		t.Fatalf("the log's MANIFEST: %v, %v", manifests, err)
	}
	for _, m := range manifests {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
	r := runCLI(t, cliEnv(t), nil, "store", "check", "--data-dir", dir)
	if r.code != 1 || !strings.Contains(r.stdout, "intact: not known") || strings.Contains(r.stdout, "intact: 0 queues") {
		t.Errorf("check of a log that cannot be opened: %+v; want intact not known, exit 1", r)
	}
	if strings.Contains(r.stderr, "salvage --data-dir") || !strings.Contains(r.stderr, "latest backup") {
		t.Errorf("check of a log that cannot be opened: stderr %q; want the backup named, not salvage", r.stderr)
	}
}

// `baton store check` of a log whose format marker is gone: Pebble
// cannot open it, but nothing is lost; the check says to make the marker
// again, naming it, and neither a backup nor salvage.
func TestCLIStoreCheckOfALogWithoutItsFormatMarker(t *testing.T) {
	t.Parallel()
	dir := stoppedStore(t)
	markers, err := filepath.Glob(filepath.Join(dir, pebblestore.LogDir, "marker.format-version.*"))
	if err != nil || len(markers) != 1 {
		t.Fatalf("the log's format marker: %v, %v", markers, err)
	}
	if err := os.Remove(markers[0]); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, cliEnv(t), nil, "store", "check", "--data-dir", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "nothing is lost: `touch "+filepath.Join(dir, pebblestore.LogDir, "marker.format-version.000001.")) ||
		strings.Contains(r.stderr, "backup") || strings.Contains(r.stderr, "salvage --data-dir") {
		t.Errorf("check of a log without its format marker: %+v; want the touch that makes it again, exit 1, no backup, no salvage", r)
	}
}

// stoppedStore is the data directory of an empty embedded store, stopped.
func stoppedStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s, err := pebblestore.Open(t.Context(), dir, pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// `baton store finish-upgrade` on a database upgraded from schema 12
// refuses while a session not of this release is connected, naming it,
// but for those of the applications --ignore-application names (never
// baton's); then drops the indexes kept for the release before and says
// so; run again, it has nothing to do. It refuses a --store that is not
// PostgreSQL's.
func TestCLIStoreFinishUpgrade(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	pgtest.OldSchema(t, url, filepath.Join("..", "..", "store", "pgstore", "migrations"), 12, true)
	s, err := pgstore.Open(t.Context(), url, pgstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	old, err := pgx.Connect(t.Context(), url+"&application_name=baton")
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close(context.Background())
	var pid int
	if err := old.QueryRow(t.Context(), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	// A monitor's session, and one that names no application (a script's).
	monitor := pgtest.MustConnect(t, url+"&application_name=monitor")
	unnamed := pgtest.MustConnect(t, url)
	var monitorPID, unnamedPID int
	if err := monitor.QueryRow(t.Context(), `SELECT pg_backend_pid()`).Scan(&monitorPID); err != nil {
		t.Fatal(err)
	}
	if err := unnamed.QueryRow(t.Context(), `SELECT pg_backend_pid()`).Scan(&unnamedPID); err != nil {
		t.Fatal(err)
	}
	names := func(stderr string) (old, monitor, unnamed bool) {
		return strings.Contains(stderr, fmt.Sprintf("pid %d, application_name \"baton\"", pid)),
			strings.Contains(stderr, fmt.Sprintf("pid %d, application_name \"monitor\"", monitorPID)),
			strings.Contains(stderr, fmt.Sprintf("pid %d, application_name \"\"", unnamedPID))
	}
	r := runCLI(t, cliEnv(t), nil, "store", "finish-upgrade", "--store", url)
	if o, m, u := names(r.stderr); r.code != 1 || !o || !m || !u || strings.Contains(r.stdout, "dropped") {
		t.Errorf("with sessions not of this release: %+v; want each named, nothing dropped", r)
	}
	r = runCLI(t, cliEnv(t), nil, "store", "finish-upgrade", "--store", url, "--ignore-application", "monitor", "--ignore-application", "")
	if o, m, u := names(r.stderr); r.code != 1 || !o || m || u || strings.Contains(r.stdout, "dropped") {
		t.Errorf("ignoring the monitor's and the unnamed session: %+v; want the old node's alone named, nothing dropped", r)
	}
	r = runCLI(t, cliEnv(t), nil, "store", "finish-upgrade", "--store", url, "--ignore-application", "baton")
	if r.code != 1 || !strings.Contains(r.stderr, `"baton" cannot be ignored`) || strings.Contains(r.stdout, "dropped") {
		t.Errorf("ignoring baton: %+v; want a refusal", r)
	}
	old.Close(t.Context())

	r = runCLI(t, cliEnv(t), nil, "store", "finish-upgrade", "--store", url, "--ignore-application", "monitor", "--ignore-application", "")
	if r.code != 0 || !strings.Contains(r.stdout, "dropped baton_messages_by_group_0012 (") ||
		!strings.Contains(r.stdout, "dropped baton_messages_by_state_0012 (") || !strings.Contains(r.stdout, "upgrade finished") {
		t.Errorf("finish: %+v", r)
	}
	r = runCLI(t, cliEnv(t), nil, "store", "finish-upgrade", "--store", url)
	if r.code != 0 || !strings.Contains(r.stdout, "nothing to do") {
		t.Errorf("finish run again: %+v", r)
	}
	r = runCLI(t, cliEnv(t), nil, "store", "finish-upgrade", "--store", t.TempDir())
	if r.code != 1 || !strings.Contains(r.stderr, "--store: name the PostgreSQL database") {
		t.Errorf("finish of a data directory: %+v", r)
	}
}

// `baton store finish-upgrade` that finds the migration lock held (here
// by a session of the test's, as a server killed mid-migration leaves its
// session) says that it waits and who holds the lock, as a server's start
// does, and when it took it; it used to wait in silence.
func TestCLIStoreFinishUpgradeSaysWhoHoldsTheLock(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	s, err := pgstore.Open(t.Context(), url, pgstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	holder := pgtest.MustConnect(t, url+"&application_name=stuck-migrator")
	var pid int
	if err := holder.QueryRow(t.Context(), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	// The migration lock's key: "baton" in ASCII (store/pgstore/migrate.go).
	if _, err := holder.Exec(t.Context(), `SELECT pg_advisory_lock(x'626174'::bigint << 16 | x'6f6e'::bigint)`); err != nil {
		t.Fatal(err)
	}
	batonBinary(t) // built before the wait is timed
	done := make(chan cliResult, 1)
	go func() { done <- runCLI(t, cliEnv(t), nil, "store", "finish-upgrade", "--store", url) }()
	// Until it has waited for the lock well past the second after which
	// it says so.
	deadline := time.Now().Add(45 * time.Second)
	for {
		var waiting bool
		err := holder.QueryRow(t.Context(), `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'SELECT pg_try_advisory_lock%'
				AND clock_timestamp() - backend_start > interval '3 seconds')`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("finish-upgrade ended while the migration lock was held: %v", r)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("finish-upgrade did not come to wait for the migration lock within 45s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	holder.Close(t.Context())
	r := <-done
	if r.code != 0 {
		t.Fatalf("finish-upgrade once the lock was free: %v", r)
	}
	for _, want := range []string{"finish-upgrade waits for the migration lock", fmt.Sprintf("holder_pid=%d", pid),
		"holder_application=stuck-migrator", "finish-upgrade lock taken"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("finish-upgrade's log does not say %s: %v", want, r)
		}
	}
}
