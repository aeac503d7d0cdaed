package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// bouncerPort names PgBouncer's socket file (.s.PGSQL.<port>); like the
// server it opens no TCP port.
const bouncerPort = 6432

// PgBouncer starts Debian's pgbouncer in front of the cluster, in pool mode
// mode ("session", "transaction" or "statement"), listening only on a unix
// socket of its own and trusting the postgres user, and stops it when the
// test ends. It returns the URL of database db through it. Without a
// pgbouncer binary the test is skipped, or fails under
// BATON_REQUIRE_POSTGRES=1 (see Unavailable).
func (c *Cluster) PgBouncer(tb testing.TB, mode, db string) string {
	tb.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		bin = "/usr/sbin/pgbouncer" // Debian's place, off a user's PATH
		if _, statErr := os.Stat(bin); statErr != nil {
			Unavailable(tb, fmt.Errorf("pgtest: no pgbouncer on PATH nor in /usr/sbin (Debian package pgbouncer): %w", err))
		}
	}
	dir, err := os.MkdirTemp("", "baton-pgbouncer-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%d

[pgbouncer]
listen_addr =
listen_port = %d
unix_socket_dir = %s
auth_type = trust
auth_file = %s
pool_mode = %s
max_client_conn = 500
default_pool_size = 50
logfile = %s
pidfile =
`, c.sockDir, port, bouncerPort, dir, filepath.Join(dir, "users.txt"), mode, filepath.Join(dir, "pgbouncer.log"))
	files := map[string]string{"pgbouncer.ini": ini, "users.txt": `"postgres" ""` + "\n"}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	if c.cred != nil { // pgbouncer, like postgres, runs as the postgres user
		for _, p := range []string{dir, filepath.Join(dir, "pgbouncer.ini"), filepath.Join(dir, "users.txt")} {
			if err := os.Chown(p, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
				tb.Fatal(err)
			}
		}
	}
	cmd := exec.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		Unavailable(tb, fmt.Errorf("pgtest: start pgbouncer: %w", err))
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM) // immediate shutdown: SIGINT waits for the clients
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	url := fmt.Sprintf("postgres://postgres@/%s?host=%s&port=%d&sslmode=disable", db, dir, bouncerPort)
	if err := awaitBouncer(tb.Context(), url, exited); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
		tb.Fatalf("%v\n%s", err, tail(string(log), 20))
	}
	return url
}

// DatabaseName returns the database name of a URL MustDatabase returned.
func DatabaseName(url string) string {
	_, rest, _ := strings.Cut(url, "@/")
	name, _, _ := strings.Cut(rest, "?")
	return name
}

// awaitBouncer polls until pgbouncer passes a connection through, it
// exits, or half a minute passes.
func awaitBouncer(ctx context.Context, url string, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	for attempt := 1; ; attempt++ {
		conn, err := pgx.Connect(ctx, url)
		if err == nil {
			return conn.Close(ctx)
		}
		last = err
		select {
		case <-exited:
			return errors.New("pgtest: pgbouncer exited at start-up")
		case <-ctx.Done():
			return fmt.Errorf("pgtest: pgbouncer not passing connections after %d attempts: %v", attempt, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
