// Package pgtest starts throwaway PostgreSQL servers for tests, from the
// initdb and postgres binaries installed on the machine.
//
// A server lives in a temporary directory, listens only on a unix socket
// there (no TCP port at all), trusts every local connection (unless a test
// makes it ask for passwords, RequirePasswords) and runs with fsync off:
// it is for tests and nothing else. When the tests run as root the server
// runs as the postgres user, since PostgreSQL refuses to run as root.
// Each test gets a database of its own, created from template0 and
// dropped when the test ends.
//
// When no PostgreSQL is installed or it cannot start, the tests that need
// it are skipped with the reason, unless BATON_REQUIRE_POSTGRES=1 is set, as
// CI does: then they fail.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton/internal/testutil/skipnote"
)

// RequireEnv is the environment variable that turns a missing or broken
// PostgreSQL into a test failure instead of a skip.
const RequireEnv = "BATON_REQUIRE_POSTGRES"

// port names the server's socket file (.s.PGSQL.<port>); the server opens no
// TCP port, so any number will do.
const port = 5432

// Cluster is a running throwaway PostgreSQL server.
type Cluster struct {
	dir     string // temporary directory: data/, sock/, postgres.log
	sockDir string
	cmd     *exec.Cmd
	exited  chan struct{}
	logPath string

	dbs atomic.Int64 // databases created, for their names

	bin, data string // for launch
	cred      *syscall.Credential

	frozen []int // the processes Freeze stopped

	// durable runs the server with fsync, full-page writes and
	// synchronous commits on (StartDurable); otherwise they are off.
	durable bool
	// settings are more -c settings for the server (StartDurable).
	settings []string
}

// launch starts the server on the cluster's data directory and waits until
// it accepts connections.
func (c *Cluster) launch(ctx context.Context) error {
	logf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	c.exited = make(chan struct{})
	args := []string{"-D", c.data,
		"-k", c.sockDir, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=",
		"-c", "max_connections=300",
		"-c", "log_min_messages=warning"}
	if !c.durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	for _, s := range c.settings {
		args = append(args, "-c", s)
	}
	c.cmd = exec.Command(filepath.Join(c.bin, "postgres"), args...)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	// The server dies with the test binary even if the binary is killed.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGQUIT}
	if err := c.cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	cmd, exited := c.cmd, c.exited
	go func() {
		cmd.Wait()
		close(exited)
	}()
	if err := c.awaitReady(ctx); err != nil {
		c.Stop()
		return err
	}
	return nil
}

// Down shuts the server down (fast shutdown) and keeps its data, as
// pg_ctl stop does: every connection breaks.
func (c *Cluster) Down() {
	select {
	case <-c.exited:
	default:
		c.Thaw()
		c.cmd.Process.Signal(syscall.SIGINT)
		<-c.exited
	}
}

// Freeze stops the server and every process of it (each backend leads a
// process group of its own) with SIGSTOP, as a machine that hangs does:
// connections stay open and nothing answers, and a new connection is
// accepted by the kernel and never greeted. The server resumes after d, or
// at Thaw; a process of its own resumes it even if the test binary dies
// meanwhile.
func (c *Cluster) Freeze(d time.Duration) error {
	pids := []int{c.cmd.Process.Pid} // the postmaster first: it forks no more
	pids = append(pids, children(c.cmd.Process.Pid)...)
	c.frozen = pids
	list := strings.Trim(fmt.Sprint(pids), "[]")
	thaw := exec.Command("sh", "-c", fmt.Sprintf("sleep %.3f; kill -CONT %s", d.Seconds(), list))
	thaw.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := thaw.Start(); err != nil {
		return fmt.Errorf("pgtest: start the thaw: %w", err)
	}
	go thaw.Wait()
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil && pid == pids[0] {
			return fmt.Errorf("pgtest: SIGSTOP: %w", err)
		}
	}
	return nil
}

// Thaw resumes a server Freeze stopped.
func (c *Cluster) Thaw() error {
	for _, pid := range slices.Backward(c.frozen) {
		syscall.Kill(pid, syscall.SIGCONT)
	}
	c.frozen = nil
	return nil
}

// children returns the ids of the processes whose parent is pid.
func children(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, not ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// Up starts the server again after Down, on the same data.
func (c *Cluster) Up(ctx context.Context) error { return c.launch(ctx) }

// Start initialises a cluster in a new temporary directory and starts its
// server. It fails when the binaries are missing or the server does not
// accept connections within a minute.
func Start(ctx context.Context) (c *Cluster, err error) { return start(ctx, false, nil) }

// StartDurable is Start for a server that keeps PostgreSQL's durable
// defaults (fsync, full-page writes, synchronous commits), as a measurement
// of a store's speed needs: a commit answers once it is on disk. Settings
// ("name=value") are passed to the server as -c options.
func StartDurable(ctx context.Context, settings ...string) (*Cluster, error) {
	return start(ctx, true, settings)
}

func start(ctx context.Context, durable bool, settings []string) (c *Cluster, err error) {
	bin, err := findBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "baton-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	c = &Cluster{dir: dir, sockDir: filepath.Join(dir, "sock"), logPath: filepath.Join(dir, "postgres.log"), durable: durable, settings: settings}
	if err := os.Mkdir(c.sockDir, 0o700); err != nil {
		return nil, err
	}
	if cred != nil {
		// The server, running as postgres, writes everywhere in dir.
		for _, p := range []string{dir, c.sockDir} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, fmt.Errorf("pgtest: make %s the postgres user's: %w", p, err)
			}
		}
	}

	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.Env = append(os.Environ(), "LC_ALL=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}

	c.bin, c.cred, c.data = bin, cred, data
	if err := c.launch(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// awaitReady polls until the server accepts a connection, it exits, or a
// minute passes.
func (c *Cluster) awaitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var last error
	for attempt := 0; ; attempt++ {
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err == nil {
			return conn.Close(ctx)
		}
		last = err
		select {
		case <-c.exited:
			return fmt.Errorf("pgtest: postgres exited at start-up:\n%s", tail(c.Log(), 30))
		case <-ctx.Done():
			return fmt.Errorf("pgtest: postgres not accepting connections after %d attempts: %v\n%s", attempt+1, last, tail(c.Log(), 30))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// URL returns the connection URL of database db: the unix socket, user
// postgres, no password.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@/%s?host=%s&port=%d&sslmode=disable", db, c.sockDir, port)
}

// MultiHostURL returns the URL of database db listing the clusters as
// hosts, in order, for a client that picks one (target_session_attrs).
func MultiHostURL(db string, clusters ...*Cluster) string {
	hosts, ports := make([]string, len(clusters)), make([]string, len(clusters))
	for i, c := range clusters {
		hosts[i], ports[i] = c.sockDir, strconv.Itoa(port)
	}
	return fmt.Sprintf("postgres://postgres@/%s?host=%s&port=%s&sslmode=disable", db, strings.Join(hosts, ","), strings.Join(ports, ","))
}

// CreateDatabase creates an empty database from template0 and returns its
// URL.
func (c *Cluster) CreateDatabase(ctx context.Context) (name, url string, err error) {
	name = fmt.Sprintf("baton_test_%d", c.dbs.Add(1))
	if err := c.admin(ctx, "CREATE DATABASE "+name+" TEMPLATE template0"); err != nil {
		return "", "", err
	}
	return name, c.URL(name), nil
}

// DropDatabase drops a database, disconnecting its sessions.
func (c *Cluster) DropDatabase(ctx context.Context, name string) error {
	return c.admin(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
}

func (c *Cluster) admin(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("pgtest: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("pgtest: %s: %w", sql, err)
	}
	return nil
}

// MustDatabase creates a database for this test, dropped when it ends, and
// returns its URL.
func (c *Cluster) MustDatabase(tb testing.TB) string {
	tb.Helper()
	name, url, err := c.CreateDatabase(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.DropDatabase(context.Background(), name); err != nil {
			tb.Errorf("drop test database: %v", err)
		}
	})
	return url
}

// Log returns the server's log so far.
func (c *Cluster) Log() string {
	b, _ := os.ReadFile(c.logPath)
	return string(b)
}

// Stop shuts the server down (fast shutdown, then SIGKILL after 15 s) and
// removes its directory.
func (c *Cluster) Stop() error {
	var err error
	if c.cmd != nil && c.cmd.Process != nil {
		select {
		case <-c.exited:
		default:
			c.Thaw()
			c.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-c.exited:
			case <-time.After(15 * time.Second):
				c.cmd.Process.Kill()
				<-c.exited
				err = errors.New("pgtest: postgres ignored SIGINT for 15s; killed")
			}
		}
	}
	if rmErr := os.RemoveAll(c.dir); err == nil {
		err = rmErr
	}
	return err
}

// findBinDir finds the directory holding initdb and postgres: on PATH, or
// the newest /usr/lib/postgresql/*/bin (Debian's place, not on PATH).
func findBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if resolved, err := filepath.EvalSymlinks(p); err == nil {
			dir = filepath.Dir(resolved) // postgres sits next to the real initdb
		}
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	return "", errors.New("pgtest: no PostgreSQL found (initdb and postgres neither on PATH nor in /usr/lib/postgresql/*/bin)")
}

func versionOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// serverCredential is who the server runs as: nil (this process's user)
// unless this process is root, which PostgreSQL refuses; then the postgres
// user.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, and PostgreSQL refuses root: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("pgtest: postgres user has uid %q, gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// Unavailable skips the test because PostgreSQL could not be started, or
// fails it when BATON_REQUIRE_POSTGRES=1.
func Unavailable(tb testing.TB, err error) {
	tb.Helper()
	if os.Getenv(RequireEnv) == "1" {
		tb.Fatalf("PostgreSQL is required (%s=1) but unavailable: %v", RequireEnv, err)
	}
	skipnote.Skip(tb, "PostgreSQL", "skipping: PostgreSQL unavailable (set %s=1 to fail instead): %v", RequireEnv, err)
}

// MustStart starts a cluster for this test alone, stopped when the test
// ends; it skips or fails the test (see Unavailable) if none can start.
func MustStart(tb testing.TB) *Cluster {
	tb.Helper()
	c, err := Start(tb.Context())
	if err != nil {
		Unavailable(tb, err)
	}
	tb.Cleanup(func() {
		if err := c.Stop(); err != nil {
			tb.Errorf("stop PostgreSQL: %v", err)
		}
	})
	return c
}

// The package-wide cluster of Main and MustDatabase.
var shared struct {
	once    sync.Once
	cluster *Cluster
	err     error
}

// Main runs a test binary's tests and stops the cluster MustDatabase
// started, if any. Call it from TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	code := skipnote.Main(m)
	if c := shared.cluster; c != nil {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// MustDatabase returns the URL of a new database, dropped when the test
// ends, on a cluster shared by the test binary: started on first use and
// stopped by Main. It skips or fails the test (see Unavailable) when
// PostgreSQL cannot start.
func MustDatabase(tb testing.TB) string {
	tb.Helper()
	return MustShared(tb).MustDatabase(tb)
}

// MustConnect opens a connection to url, closed when the test ends, or
// fails the test.
func MustConnect(tb testing.TB, url string) *pgx.Conn {
	tb.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// MustShared returns the cluster MustDatabase uses, starting it on first
// use; it skips or fails the test (see Unavailable) when PostgreSQL cannot
// start. Tests must not stop, freeze or reconfigure it.
func MustShared(tb testing.TB) *Cluster {
	tb.Helper()
	shared.once.Do(func() {
		shared.cluster, shared.err = Start(context.Background())
	})
	if shared.err != nil {
		Unavailable(tb, shared.err)
	}
	return shared.cluster
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
