package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/skipnote"
)

// The Patroni test runs two `baton serve` nodes on a three-member
// PostgreSQL cluster managed by Patroni (deploy/patroni/, in synchronous
// mode) and coordinated through etcd, all on 127.0.0.1, drives them with
// producers and consumers, and kills the primary's postmaster with SIGKILL
// mid-run: whichever member Patroni's REST API and pg_is_in_recovery() say
// is the primary. Patroni promotes the synchronous standby and the nodes,
// whose URL lists every member with target_session_attrs=read-write,
// follow it. Once the killed member is back as a standby and the cluster
// whole again, it kills the new primary too. It checks that no
// acknowledged send is lost, no acknowledged delete comes back, no message
// is leased twice at once, no client ever sees HTTP 500 (503
// ServiceUnavailable is allowed, and counted), sends succeed again on
// every node within a bound after each kill, long polls waiting at each
// kill keep waiting and are answered, and no member ever runs as a
// primary without a synchronous standby to wait for: the new primary
// reports a standby in sync state, and until then its commits wait.

// requirePatroniEnv turns missing Patroni or etcd into a failure.
const requirePatroniEnv = "BATON_REQUIRE_PATRONI"

const (
	patroniSuperPassword = "baton-super-secret" // as in deploy/patroni/patroni*.yml
	patroniPgBin         = "/usr/lib/postgresql/15/bin"
)

func patroniUnavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	componentUnavailable(t, "Patroni", requirePatroniEnv, fmt.Sprintf(format, args...))
}

// componentUnavailable skips t because component is missing, as why says,
// or fails it when the environment variable require is 1, as CI sets it.
func componentUnavailable(t *testing.T, component, require, why string) {
	t.Helper()
	if os.Getenv(require) == "1" {
		t.Fatalf("%s is required (%s=1) but unavailable: %s", component, require, why)
	}
	skipnote.Skip(t, component, "skipping: %s (set %s=1 to fail instead)", why, require)
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// daemon is a process the test started and stops by its PID.
type daemon struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

func startDaemon(t *testing.T, name, logPath string, cred *syscall.Credential, env []string, prog string, args ...string) *daemon {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	if cred != nil {
		os.Chown(logPath, int(cred.Uid), int(cred.Gid))
	}
	cmd := exec.Command(prog, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = env
	// Its own process group, so that cleanup can end what it started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	d := &daemon{name: name, cmd: cmd, exited: make(chan struct{}), log: logPath}
	go func() {
		cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		pid := cmd.Process.Pid
		select {
		case <-d.exited:
		default:
			syscall.Kill(pid, syscall.SIGTERM)
			select {
			case <-d.exited:
			case <-time.After(10 * time.Second):
				syscall.Kill(pid, syscall.SIGKILL)
				<-d.exited
			}
		}
		// Whatever it left in its group (postgres children): by group id.
		syscall.Kill(-pid, syscall.SIGKILL)
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s log (last 3000 bytes):\n%s", name, lastBytes(b, 3000))
		}
	})
	return d
}

func lastBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// patroniMember is one PostgreSQL member.
type patroniMember struct {
	name          string
	pgPort, rest  int
	dataDir       string
	patroni       *daemon
	pgCredentials *syscall.Credential
}

// role asks the member's REST API whether it is the primary.
func (m *patroniMember) isPrimary() bool {
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/primary", m.rest))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// clusterState is the part of Patroni's GET /cluster the test reads.
type clusterState struct {
	Members []struct {
		Name  string `json:"name"`
		Role  string `json:"role"`
		State string `json:"state"`
	} `json:"members"`
}

func (m *patroniMember) cluster() (clusterState, error) {
	var cs clusterState
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/cluster", m.rest))
	if err != nil {
		return cs, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&cs)
	return cs, err
}

func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and PostgreSQL refuses root: %w", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// startPatroniCluster starts etcd and three Patroni members from the
// deploy/patroni examples, rewritten for free ports and a temporary
// directory, and waits until there is a primary and a synchronous standby.
func startPatroniCluster(t *testing.T) []*patroniMember {
	t.Helper()
	etcdBin, err1 := exec.LookPath("etcd")
	patroniBin, err2 := exec.LookPath("patroni")
	if err := errors.Join(err1, err2); err != nil {
		patroniUnavailable(t, "etcd or patroni not installed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(patroniPgBin, "postgres")); err != nil {
		patroniUnavailable(t, "PostgreSQL 15 not installed: %v", err)
	}
	cred, err := postgresCredential()
	if err != nil {
		patroniUnavailable(t, "%v", err)
	}
	dir, err := os.MkdirTemp("", "baton-patroni-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			// The members' whole logs, for what the last lines shown do not tell.
			t.Logf("kept the cluster's directory, with its logs: %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	if cred != nil {
		os.Chmod(dir, 0o755)
		os.Chown(dir, int(cred.Uid), int(cred.Gid))
	}
	ports := freePorts(t, 8)
	etcdClient, etcdPeer := ports[0], ports[1]

	env := []string{"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8", "LANG=C.UTF-8", "HOME=" + dir}
	// etcd syncs its log on every write; on a busy disk a slow sync
	// delays the leader's renewals past retry_timeout and Patroni demotes
	// a healthy primary. In memory (/dev/shm, where there is one) a sync
	// costs nothing; this etcd holds nothing worth keeping.
	etcdDir := filepath.Join(dir, "etcd")
	if shm, err := os.MkdirTemp("/dev/shm", "baton-etcd-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(shm) })
		etcdDir = filepath.Join(shm, "etcd")
	}
	startDaemon(t, "etcd", filepath.Join(dir, "etcd.log"), nil, env, etcdBin,
		"--name", "e1", "--data-dir", etcdDir,
		"--listen-client-urls", fmt.Sprintf("http://127.0.0.1:%d", etcdClient),
		"--advertise-client-urls", fmt.Sprintf("http://127.0.0.1:%d", etcdClient),
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", etcdPeer),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", etcdPeer),
		"--initial-cluster", fmt.Sprintf("e1=http://127.0.0.1:%d", etcdPeer))
	testutil.CheckFor(t, 30*time.Second, func() error {
		resp, err := (&http.Client{Timeout: time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/health", etcdClient))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("etcd /health: %d", resp.StatusCode)
		}
		return nil
	})

	members := make([]*patroniMember, 3)
	for i := range members {
		n := i + 1
		src, err := os.ReadFile(filepath.Join(moduleRoot, "deploy", "patroni", fmt.Sprintf("patroni%d.yml", n)))
		if err != nil {
			t.Fatal(err)
		}
		m := &patroniMember{name: fmt.Sprintf("pg%d", n), pgPort: ports[2+i], rest: ports[5+i],
			dataDir: filepath.Join(dir, fmt.Sprintf("pg%d", n)), pgCredentials: cred}
		conf := strings.NewReplacer(
			fmt.Sprintf("127.0.0.1:%d", 5432+n), fmt.Sprintf("127.0.0.1:%d", m.pgPort),
			fmt.Sprintf("127.0.0.1:%d", 8008+n), fmt.Sprintf("127.0.0.1:%d", m.rest),
			"127.0.0.1:2379", fmt.Sprintf("127.0.0.1:%d", etcdClient),
			"/var/lib/patroni", dir,
			"/usr/lib/postgresql/15/bin", patroniPgBin,
		).Replace(string(src))
		// The examples name the example ports; a test that ran them
		// unchanged would collide with anything on the host.
		if strings.Contains(conf, ":2379") || strings.Contains(conf, "/var/lib/patroni") {
			t.Fatalf("patroni%d.yml: template not fully rewritten:\n%s", n, conf)
		}
		confPath := filepath.Join(dir, m.name+".yml")
		if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		sock := filepath.Join(dir, fmt.Sprintf("sock%d", n))
		if err := os.Mkdir(sock, 0o700); err != nil {
			t.Fatal(err)
		}
		if cred != nil {
			os.Chown(sock, int(cred.Uid), int(cred.Gid))
		}
		// Patroni itself, as postgres: its PID is cmd's (no wrapper), and
		// its postgres children share its process group.
		m.patroni = startDaemon(t, "patroni "+m.name, filepath.Join(dir, m.name+".log"), cred, env, patroniBin, confPath)
		members[i] = m
		if i == 0 {
			// The first member bootstraps alone; the others then clone it.
			testutil.CheckFor(t, 60*time.Second, func() error {
				if !m.isPrimary() {
					return errors.New("pg1 not primary yet")
				}
				return nil
			})
		}
	}
	testutil.CheckFor(t, 60*time.Second, clusterReady(context.Background(), members))
	return members
}

// clusterReady returns a condition that holds once the cluster is whole:
// as any member's REST API tells it, a running primary, a synchronous
// standby and a third member streaming; and as the primary itself tells
// it, both standbys have flushed the WAL it had written at the previous
// look. Patroni calls a member running that may yet have to be rewound (a
// former primary whose WAL ran past the point where its successor took
// over), and such a member streams nothing from the new primary until it
// is: a primary killed then would leave no standby to wait for.
func clusterReady(ctx context.Context, members []*patroniMember) func() error {
	var names []string
	for _, m := range members {
		names = append(names, m.name)
	}
	since := "FFFFFFFF/FFFFFFFF" // the primary's WAL position at the previous look
	return func() error {
		if err := patroniWhole(members); err != nil {
			return err
		}
		p, err := primary(ctx, members)
		if err != nil {
			return err
		}
		conn, err := pgx.Connect(ctx, p.dsn())
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		var now string
		var streaming int64
		err = conn.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text, (SELECT count(*) FROM pg_stat_replication
			WHERE state = 'streaming' AND application_name = ANY($2) AND flush_lsn >= $1::pg_lsn)`, since, names).Scan(&now, &streaming)
		if err != nil {
			return err
		}
		since = now
		if streaming != 2 {
			return fmt.Errorf("primary %s: %d standbys streaming its WAL, want 2", p.name, streaming)
		}
		return nil
	}
}

// patroniWhole returns an error unless the cluster, as any member's REST
// API tells it, has a running primary, a streaming synchronous standby and
// a third member streaming.
func patroniWhole(members []*patroniMember) error {
	var errs []error
	for _, m := range members {
		cs, err := m.cluster()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		roles := map[string]int{}
		for _, m := range cs.Members {
			if m.State == "running" || m.State == "streaming" {
				roles[m.Role]++
			}
		}
		if roles["leader"] != 1 || roles["sync_standby"] != 1 || roles["replica"]+roles["sync_standby"] != 2 {
			return fmt.Errorf("cluster not ready: %+v", cs.Members)
		}
		return nil
	}
	return errors.Join(errs...)
}

// primary returns the member that Patroni's REST API calls the primary and
// that PostgreSQL itself says is not in recovery.
func primary(ctx context.Context, members []*patroniMember) (*patroniMember, error) {
	for _, m := range members {
		if !m.isPrimary() {
			continue
		}
		conn, err := pgx.Connect(ctx, m.dsn())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.name, err)
		}
		defer conn.Close(ctx)
		var inRecovery bool
		if err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery); err != nil {
			return nil, fmt.Errorf("%s: %w", m.name, err)
		}
		if inRecovery {
			return nil, fmt.Errorf("%s: Patroni says primary, PostgreSQL says in recovery", m.name)
		}
		return m, nil
	}
	return nil, errors.New("no member is primary")
}

// dsn is m's own database, as the superuser.
func (m *patroniMember) dsn() string {
	return fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", patroniSuperPassword, m.pgPort)
}

// postmaster returns the PID of m's postmaster, from its postmaster.pid.
func (m *patroniMember) postmaster() (int, error) {
	pidLine, err := os.ReadFile(filepath.Join(m.dataDir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.SplitN(string(pidLine), "\n", 2)[0])
	if err != nil {
		return 0, fmt.Errorf("%s: postmaster.pid: %w", m.name, err)
	}
	return pid, nil
}

// killPostmaster kills m's postmaster with SIGKILL and returns its PID.
func (m *patroniMember) killPostmaster(t *testing.T) int {
	t.Helper()
	pid, err := m.postmaster()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill postmaster %d: %v", pid, err)
	}
	t.Logf("killed the postmaster (pid %d) of primary %s", pid, m.name)
	return pid
}

// dsn lists every member, for pgx to find the primary.
func patroniDSN(members []*patroniMember, db string) string {
	var hosts []string
	for _, m := range members {
		hosts = append(hosts, fmt.Sprintf("127.0.0.1:%d", m.pgPort))
	}
	return fmt.Sprintf("postgres://postgres:%s@%s/%s?target_session_attrs=read-write&sslmode=disable&connect_timeout=2",
		patroniSuperPassword, strings.Join(hosts, ","), db)
}

// pfCounter counts client-side outcomes.
type pfCounter struct {
	ok, unavailable atomic.Int64
	mu              sync.Mutex
	other           []string // errors other than 503: every one fails the test
}

// note classifies err; it reports whether the call succeeded.
func (c *pfCounter) note(what string, err error) bool {
	if err == nil {
		c.ok.Add(1)
		return true
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusServiceUnavailable {
		c.unavailable.Add(1)
		return false
	}
	c.mu.Lock()
	if len(c.other) < 30 {
		c.other = append(c.other, fmt.Sprintf("%s: %v", what, err))
	}
	c.mu.Unlock()
	return false
}

func TestPatroniFailover(t *testing.T) {
	skipnote.SkipUnlessLong(t, "a Patroni cluster's primary killed twice under two nodes")
	if testing.Short() {
		t.Skip("slow: starts a Patroni cluster")
	}
	start := time.Now()
	members := startPatroniCluster(t)
	t.Logf("Patroni cluster of 3 up in %v", time.Since(start).Round(time.Millisecond))

	// The nodes' database.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, patroniDSN(members, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE baton"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	dsn := patroniDSN(members, "baton")
	nodes := make([]*mnNode, 2)
	for i := range nodes {
		p := startBatonArgs(t, "--account-id", account, "--store", dsn)
		nodes[i] = &mnNode{batonProcess: p, client: mnClient(p.URL)}
	}
	const (
		queue, pollQueue  = "ha", "ha-poll"
		visibilityTimeout = 5
		kills             = 2
		firstKillAfter    = 10 * time.Second // of load
		afterLastKill     = 8 * time.Second  // of load
		recoveryBound     = 15 * time.Second
	)
	mnCreateQueue(t, nodes[0], queue, map[string]string{"VisibilityTimeout": strconv.Itoa(visibilityTimeout)})
	mnCreateQueue(t, nodes[0], pollQueue, nil)

	l := newMNLedger(t)
	var counts pfCounter
	var attempted sync.Map                // body -> true, for sends tried (acknowledged or not)
	deleteAcked := map[string]time.Time{} // message id -> when its delete was acknowledged, under l.mu
	acks := newSendAcks(len(nodes))

	stopProducers, stopConsumers := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	for ni, n := range nodes {
		for p := range 2 {
			wg.Go(func() {
				for b := 0; b < 100000; b++ {
					select {
					case <-stopProducers:
						return
					default:
					}
					entries := make([]types.SendMessageBatchRequestEntry, 10)
					bodies := make([]string, 10)
					for i := range entries {
						bodies[i] = fmt.Sprintf("n%dp%d-%06d-%d", ni, p, b, i)
						attempted.Store(bodies[i], true)
						entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(bodies[i])}
					}
					asked := time.Now()
					out, err := n.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(n.queueURL(queue)), Entries: entries})
					if !counts.note("send", err) {
						time.Sleep(50 * time.Millisecond)
						continue
					}
					acks.add(ni, asked, time.Now())
					// At most ten batches a second each: a load the
					// consumers keep up with on a busy two-core machine,
					// so the queue drains soon after the producers stop.
					time.Sleep(100 * time.Millisecond)
					l.mu.Lock()
					for _, ok := range out.Successful {
						i, _ := strconv.Atoi(*ok.Id)
						l.sent[*ok.MessageId] = bodies[i]
					}
					for _, f := range out.Failed {
						l.errs = append(l.errs, fmt.Sprintf("send entry failed: %s %s", aws.ToString(f.Code), aws.ToString(f.Message)))
					}
					l.mu.Unlock()
				}
			})
		}
		for c := range 2 {
			consumer := ni*2 + c
			wg.Go(func() {
				for range 100000 {
					select {
					case <-stopConsumers:
						return
					default:
					}
					requested := time.Now()
					out, err := n.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
						QueueUrl: aws.String(n.queueURL(queue)), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
					})
					answered := time.Now()
					if !counts.note("receive", err) {
						time.Sleep(50 * time.Millisecond)
						continue
					}
					if len(out.Messages) == 0 {
						continue
					}
					l.mu.Lock()
					l.calls++
					held := make([]*mnLease, len(out.Messages))
					entries := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
					ids := make([]string, len(out.Messages))
					for i, m := range out.Messages {
						id := *m.MessageId
						if _, ok := attempted.Load(aws.ToString(m.Body)); !ok {
							l.errs = append(l.errs, fmt.Sprintf("message %s: body %q never sent", id, aws.ToString(m.Body)))
						}
						if want, ok := l.sent[id]; ok && want != aws.ToString(m.Body) {
							l.errs = append(l.errs, fmt.Sprintf("message %s: body %q, sent %q", id, aws.ToString(m.Body), want))
						}
						if at, ok := deleteAcked[id]; ok && requested.After(at) {
							var before []string
							for _, le := range l.leases[id] {
								before = append(before, fmt.Sprintf("consumer %d asked %s answered %s delete asked %s",
									le.consumer, le.requested.Format(time.StampMicro), le.answered.Format(time.StampMicro), le.deleteAsked.Format(time.StampMicro)))
							}
							l.errs = append(l.errs, fmt.Sprintf("message %s: received by consumer %d (asked %s) after its delete was acknowledged at %s; leased before: %s",
								id, consumer, requested.Format(time.StampMicro), at.Format(time.StampMicro), strings.Join(before, "; ")))
						}
						held[i] = &mnLease{consumer: consumer, requested: requested, answered: answered, call: l.calls, handle: *m.ReceiptHandle}
						l.leases[id] = append(l.leases[id], held[i])
						entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
						ids[i] = id
					}
					l.mu.Unlock()
					asked := time.Now()
					dout, err := n.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(n.queueURL(queue)), Entries: entries})
					acked := time.Now()
					if !counts.note("delete", err) {
						continue
					}
					l.mu.Lock()
					for _, ok := range dout.Successful {
						i, _ := strconv.Atoi(*ok.Id)
						held[i].deleteAsked = asked
						l.deleted[ids[i]] = true
						deleteAcked[ids[i]] = acked
					}
					for _, f := range dout.Failed {
						// A receipt whose lease lapsed during the outage
						// may be refused; the message comes back.
						i, _ := strconv.Atoi(*f.Id)
						t.Logf("delete %s refused: %s %s", ids[i], aws.ToString(f.Code), aws.ToString(f.Message))
					}
					l.mu.Unlock()
				}
			})
		}
	}

	// Kill the primary, and once the cluster is whole again (the killed
	// member back as a standby), kill the new one.
	time.Sleep(firstKillAfter - 2*time.Second)
	var rounds []*killRound
	for k := range kills {
		if k > 0 {
			testutil.CheckFor(t, 90*time.Second, clusterReady(ctx, members))
			t.Logf("cluster of 3 whole again %v after kill %d", time.Since(rounds[k-1].at).Round(time.Millisecond), k)
		}
		rounds = append(rounds, failoverRound(ctx, t, k+1, members, nodes, pollQueue, acks, recoveryBound))
	}
	time.Sleep(afterLastKill)
	close(stopProducers)
	drainStart := time.Now()
	l.awaitDrained(t, nodes, queue, 60*time.Second, nil)
	t.Logf("queue drained %v after the producers stopped", time.Since(drainStart).Round(time.Millisecond))
	close(stopConsumers)
	wg.Wait()
	l.report(t)
	redelivered := l.checkLeases(t, visibilityTimeout*time.Second)
	counts.mu.Lock()
	for _, e := range counts.other {
		t.Errorf("client saw an error other than 503: %s", e)
	}
	counts.mu.Unlock()
	l.mu.Lock()
	sent, deleted := len(l.sent), len(l.deleted)
	l.mu.Unlock()
	for k, r := range rounds {
		t.Logf("kill %d, of primary %s (then primary: %s, seen after %v, with a synchronous standby after %v): sends back after %v (node 0) and %v (node 1)",
			k+1, r.primary, r.successor, r.promoted.Round(time.Millisecond), r.synced.Round(time.Millisecond),
			r.recovered[0].Round(time.Millisecond), r.recovered[1].Round(time.Millisecond))
	}
	t.Logf("%d calls succeeded, %d answered 503; %d sends acknowledged, %d deletes acknowledged, %d messages received more than once",
		counts.ok.Load(), counts.unavailable.Load(), sent, deleted, redelivered)
}

// killRound is one kill of the primary.
type killRound struct {
	primary   string    // the member killed
	successor string    // the primary after it
	at        time.Time // when
	// recovered is, per node, how long after the kill sends were
	// acknowledged again.
	recovered []time.Duration
	// promoted and synced are how long after the kill the successor was
	// first seen as a primary, and with a standby in sync state: between
	// the two its commits waited.
	promoted, synced time.Duration
}

// syncWatch samples every member's PostgreSQL from a kill on, every
// 100 ms: whether it is a primary, its synchronous_standby_names and
// whether pg_stat_replication shows a standby in sync state. A primary
// whose synchronous_standby_names is empty acknowledges commits that are
// on it alone (what synchronous_mode without strict does for the seconds
// after a promotion, until Patroni picks a standby); in strict mode a new
// primary starts with "*", any standby, and its commits wait for one.
type syncWatch struct {
	from time.Time
	stop chan struct{}
	wg   sync.WaitGroup

	mu        sync.Mutex
	unguarded []string             // "pg2 1.2s after the kill", one per member
	primary   map[string]time.Time // member -> first seen primary
	synced    map[string]time.Time // member -> first seen primary with a standby in sync
}

func watchSync(ctx context.Context, members []*patroniMember, from time.Time) *syncWatch {
	w := &syncWatch{from: from, stop: make(chan struct{}), primary: map[string]time.Time{}, synced: map[string]time.Time{}}
	for _, m := range members {
		w.wg.Go(func() { w.watch(ctx, m) })
	}
	return w
}

func (w *syncWatch) watch(ctx context.Context, m *patroniMember) {
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	unguarded := false
	for {
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if conn == nil {
			c, err := pgx.Connect(ctx, m.dsn())
			if err != nil {
				continue // down, or starting: it is no primary then
			}
			conn = c
		}
		var primary bool
		var names string
		var inSync int64
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := conn.QueryRow(qctx, `SELECT NOT pg_is_in_recovery(), current_setting('synchronous_standby_names'),
			(SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync')`).Scan(&primary, &names, &inSync)
		cancel()
		if err != nil {
			conn.Close(context.Background())
			conn = nil
			continue
		}
		if !primary {
			continue
		}
		now := time.Now()
		w.mu.Lock()
		if names == "" && !unguarded {
			unguarded = true
			w.unguarded = append(w.unguarded, fmt.Sprintf("%s %v after the kill", m.name, now.Sub(w.from).Round(time.Millisecond)))
		}
		if _, seen := w.primary[m.name]; !seen {
			w.primary[m.name] = now
		}
		if _, seen := w.synced[m.name]; !seen && inSync > 0 {
			w.synced[m.name] = now
		}
		w.mu.Unlock()
	}
}

// seen returns when member was first seen as a primary, and with a
// standby in sync state (zero until then).
func (w *syncWatch) seen(member string) (primary, synced time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.primary[member], w.synced[member]
}

// halt stops the sampling and returns the primaries seen with no
// synchronous standby required.
func (w *syncWatch) halt() []string {
	close(w.stop)
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.unguarded
}

// sendAcks logs, per node, when each acknowledged send was asked and when
// it was acknowledged.
type sendAcks struct {
	mu   sync.Mutex
	node [][][2]time.Time
}

func newSendAcks(nodes int) *sendAcks { return &sendAcks{node: make([][][2]time.Time, nodes)} }

func (a *sendAcks) add(node int, asked, acked time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.node[node] = append(a.node[node], [2]time.Time{asked, acked})
}

// askedSince reports whether a send through node asked after t was
// acknowledged.
func (a *sendAcks) askedSince(node int, t time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	acks := a.node[node]
	return len(acks) > 0 && acks[len(acks)-1][0].After(t)
}

// resumed returns when node's sends were acknowledged again after kill:
// the end of the longest pause between acknowledgements from a second
// before the kill on. Not the first acknowledgement after the kill, which
// a backend of the killed postmaster that has not yet noticed may give.
func (a *sendAcks) resumed(node int, kill time.Time) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	var prev, end time.Time
	longest := time.Duration(-1)
	for _, ack := range a.node[node] {
		if at := ack[1]; at.After(kill.Add(-time.Second)) {
			if !prev.IsZero() && at.Sub(prev) > longest {
				longest, end = at.Sub(prev), at
			}
			prev = at
		}
	}
	return end
}

// followBound is how soon after a primary can take commits again (it has
// a synchronous standby) a node's sends are acknowledged again, at most:
// the store's retry bound (pgstore.DefaultRetryFor), within which a send
// that met the outage runs again.
const followBound = 5 * time.Second

// failoverRound starts a long poll on every node and kills the current
// primary's postmaster with the polls waiting. It waits for Patroni to
// name a new primary and for every node to acknowledge a send asked after
// that, checks that sends were acknowledged again within bound of the
// kill (or, when Patroni itself took longer, within followBound of the
// new primary taking commits), and answers the long polls, which must
// still be waiting.
func failoverRound(ctx context.Context, t *testing.T, k int, members []*patroniMember, nodes []*mnNode, pollQueue string,
	acks *sendAcks, bound time.Duration) *killRound {
	t.Helper()
	polls := make(chan outagePoll, len(nodes))
	pollStart := time.Now()
	for i, n := range nodes {
		go func() { polls <- longPoll(ctx, n.client, n.queueURL(pollQueue), i) }()
	}
	time.Sleep(2 * time.Second) // for the polls to reach their nodes
	p, err := primary(ctx, members)
	if err != nil {
		t.Fatalf("kill %d: %v", k, err)
	}
	r := &killRound{primary: p.name, recovered: make([]time.Duration, len(nodes))}
	killed := p.killPostmaster(t)
	r.at = time.Now()
	watch := watchSync(ctx, members, r.at)

	// Patroni's answer: a standby promoted or, when it judged none fit
	// (one not answering its REST API in time, say), the killed member
	// restarted in place.
	testutil.CheckFor(t, 60*time.Second, func() error {
		m, err := primary(ctx, members)
		if err != nil {
			return err
		}
		if pid, err := m.postmaster(); m == p && (err != nil || pid == killed) {
			return fmt.Errorf("%s still primary, its postmaster (pid %d) killed", p.name, killed)
		}
		r.successor = m.name
		return nil
	})
	if r.successor == p.name {
		t.Logf("kill %d: Patroni restarted %s in place instead of failing over", k, p.name)
	} else {
		t.Logf("kill %d: Patroni promoted %s", k, r.successor)
	}
	named := time.Now()
	testutil.CheckFor(t, bound+15*time.Second, func() error {
		for i := range nodes {
			if !acks.askedSince(i, named) {
				return fmt.Errorf("kill %d: node %d: no send acknowledged since %s became primary", k, i, r.successor)
			}
		}
		return nil
	})
	for i := range nodes {
		r.recovered[i] = acks.resumed(i, r.at).Sub(r.at)
		t.Logf("kill %d: node %d: sends acknowledged again %v after the kill", k, i, r.recovered[i].Round(time.Millisecond))
	}
	// Sends are acknowledged again, so the new primary has a synchronous
	// standby by now; and no primary ever ran requiring none.
	testutil.CheckFor(t, 10*time.Second, func() error {
		if _, synced := watch.seen(r.successor); synced.IsZero() {
			return fmt.Errorf("kill %d: primary %s: no standby in sync state in pg_stat_replication", k, r.successor)
		}
		return nil
	})
	promoted, synced := watch.seen(r.successor)
	r.promoted, r.synced = promoted.Sub(r.at), synced.Sub(r.at)
	t.Logf("kill %d: %s seen as primary %v after the kill, with a synchronous standby after %v",
		k, r.successor, r.promoted.Round(time.Millisecond), r.synced.Round(time.Millisecond))
	for i := range nodes {
		// Past the bound, the nodes are still on time if they followed the
		// database within followBound of its taking commits again: Patroni
		// itself can take the bound or longer (restarting the killed
		// member in place, say).
		if lag := r.recovered[i] - r.synced; r.recovered[i] > bound && lag > followBound {
			t.Errorf("kill %d: node %d: sends failed for %v after the kill, want under %v, or under %v after the primary %s had a synchronous standby (it had after %v)",
				k, i, r.recovered[i].Round(time.Millisecond), bound, followBound, r.successor, r.synced.Round(time.Millisecond))
		}
	}
	for _, u := range watch.halt() {
		t.Errorf("kill %d: a primary required no synchronous standby (synchronous_standby_names empty), so acknowledged commits on it alone: %s", k, u)
	}
	for i := range nodes {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := nodes[0].client.SendMessage(c, &sqs.SendMessageInput{QueueUrl: aws.String(nodes[0].queueURL(pollQueue)), MessageBody: aws.String(fmt.Sprintf("kill %d poll %d", k, i))})
		cancel()
		if err != nil {
			t.Errorf("kill %d: send to the polled queue: %v", k, err)
		}
	}
	for range nodes {
		select {
		case pr := <-polls:
			if pr.err != nil || pr.n != 1 {
				t.Errorf("kill %d: node %d: long poll waiting at the kill: %d messages after %v, %v; want one, answered after the failover",
					k, pr.node, pr.n, pr.answered.Sub(pollStart).Round(time.Millisecond), pr.err)
				continue
			}
			t.Logf("kill %d: node %d: long poll waiting at the kill answered %v after it began", k, pr.node, pr.answered.Sub(pollStart).Round(time.Millisecond))
		case <-time.After(30 * time.Second):
			t.Errorf("kill %d: a long poll waiting at the kill never answered", k)
		}
	}
	return r
}
