package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/sdkhttp"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/skipnote"
)

// TestThreeHosts brings up deploy/three-hosts/ as docs/deploy-three-hosts.md
// tells an operator to, on three network namespaces standing for three
// hosts: generate.sh writes the CA, the certificates and every host's
// files from an inventory of three addresses; each host runs etcd (a
// cluster of three, TLS with client certificates), Patroni (strict
// synchronous mode, its REST API on TLS; the first member creates Baton's
// database and role), HAProxy (routing PostgreSQL to the member whose
// /primary answers 200, and the SQS API to the nodes that pass /healthz)
// and a Baton node reaching PostgreSQL through its host's HAProxy, as the
// least-privileged role, on TLS.
//
// Producers send through a real SDK to every host's HAProxy, consumers
// receive and delete, and the primary is then killed (its postmaster,
// SIGKILL) and, once the cluster is whole again, the new primary's host
// frozen (Patroni and PostgreSQL, SIGSTOP). The watchdog patroni.yml
// requires would reset that host 5 s later, before its leader lock lapses:
// the test does what the watchdog would (SIGKILL) and starts Patroni again
// 15 s after the freeze, the host back. (BATON_THREE_HOSTS_WAKE=1 resumes
// the frozen processes with SIGCONT instead: a stale primary waking, as
// with no watchdog.) It checks that every acknowledged send is received,
// that no call is answered anything but success or 503, that each HAProxy
// routes to the new primary alone, and that the nodes' /healthz fails
// while no primary can be reached and passes once one can.
func TestThreeHosts(t *testing.T) {
	skipnote.SkipUnlessLong(t, "three hosts on network namespaces, the primary killed and frozen")
	if testing.Short() {
		t.Skip("slow: starts three hosts")
	}
	bins := map[string]string{}
	var missing []error
	for _, prog := range []string{"etcd", "patroni", "haproxy", "openssl", "ip", "setpriv", "psql"} {
		p, err := exec.LookPath(prog)
		missing = append(missing, err)
		bins[prog] = p
	}
	if _, err := os.Stat(filepath.Join(patroniPgBin, "postgres")); err != nil {
		missing = append(missing, err)
	}
	if err := errors.Join(missing...); err != nil {
		patroniUnavailable(t, "the three-host deployment needs etcd, Patroni, HAProxy, openssl, iproute2, setpriv and PostgreSQL 15: %v", err)
	}
	if os.Geteuid() != 0 {
		patroniUnavailable(t, "network namespaces need root")
	}
	cred, err := postgresCredential()
	if err != nil || cred == nil {
		patroniUnavailable(t, "no postgres user: %v", err)
	}
	// BATON_THREE_HOSTS_WAKE=1 resumes the frozen primary instead of
	// resetting it as its watchdog would: a stale primary that wakes, the
	// case the watchdog is there to prevent, which the test machine has
	// none for. With Patroni 3.0.2 it lost acknowledged sends in one run
	// of three (docs/deploy-three-hosts.md); a Patroni with the upstream
	// fix should lose none.
	wake := os.Getenv("BATON_THREE_HOSTS_WAKE") == "1"
	start := time.Now()

	// Each host's files in memory where there is /dev/shm: etcd and
	// PostgreSQL sync often, and a slow sync on a busy disk delays the
	// leader's renewals past Patroni's retry_timeout.
	base := os.TempDir()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		base = "/dev/shm"
	}
	dir, err := os.MkdirTemp(base, "baton-3h-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() {
		if t.Failed() {
			keep, err := os.MkdirTemp("", "baton-3h-logs-")
			if err == nil {
				logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
				for _, l := range logs {
					if b, err := os.ReadFile(l); err == nil {
						os.WriteFile(filepath.Join(keep, filepath.Base(l)), b, 0o644)
					}
				}
				t.Logf("kept the hosts' logs in %s", keep)
			}
		}
		os.RemoveAll(dir)
	})

	_, hosts := makeNetwork(t)
	d := &threeHosts{dir: dir, hosts: hosts}
	generate(t, dir, hosts)
	d.install(t, int(cred.Uid), int(cred.Gid))
	d.operator = operatorClient(t, dir)
	d.start(t, bins["patroni"], bins["etcd"], bins["haproxy"])
	t.Logf("three hosts up in %v: etcd, Patroni, HAProxy and Baton on %s, %s, %s",
		time.Since(start).Round(time.Millisecond), hosts[0].addr, hosts[1].addr, hosts[2].addr)

	// Baton's role is no superuser and owns its schema alone.
	checkBatonRole(t, d)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	id, secret := credentialsOf(t, hosts[0].etc("baton-credentials"))
	l := &threeHostsLoad{}
	for _, h := range hosts {
		l.clients = append(l.clients, sqs.New(sqs.Options{
			BaseEndpoint:     aws.String("http://" + net.JoinHostPort(h.addr, "9324")),
			Region:           "us-east-1",
			Credentials:      credentials.NewStaticCredentialsProvider(id, secret, ""),
			RetryMaxAttempts: 1, // every error is seen and counted
			HTTPClient:       sdkhttp.Client(&http.Client{Timeout: 40 * time.Second}),
		}))
	}
	out, err := l.clients[0].CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("three-hosts"),
		Attributes: map[string]string{"VisibilityTimeout": "10"}})
	if err != nil {
		t.Fatalf("create queue through HAProxy: %v", err)
	}
	l.queueURL = aws.ToString(out.QueueUrl)
	l.start(ctx)
	watch := watchHealth(ctx, hosts)

	time.Sleep(5 * time.Second) // of load before the first fault
	var faults []*threeHostsFault

	// 1: the primary's postmaster killed.
	old, err := d.primary()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := old.postmaster()
	if err != nil {
		t.Fatal(err)
	}
	f := &threeHostsFault{what: "SIGKILL of the postmaster", old: old.name, at: time.Now()}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed the postmaster (pid %d) of primary %s", pid, old.name)
	d.awaitNewPrimary(t, f, old, nil, pid)
	faults = append(faults, f)
	l.awaitSends(t, f, 30*time.Second)

	// 2: once the killed member is back as a standby, the new primary
	// frozen, Patroni and PostgreSQL both, for 15 s. On a machine at load 25
	// the killed member was seen still stopped 90 s after the kill.
	testutil.CheckFor(t, 4*time.Minute, func() error { return d.whole(nil) })
	t.Logf("cluster of 3 whole again %v after the kill", time.Since(f.at).Round(time.Millisecond))
	time.Sleep(3 * time.Second) // of load with the cluster whole
	old, err = d.primary()
	if err != nil {
		t.Fatal(err)
	}
	f.final = old.name
	pm, err := old.postmaster()
	if err != nil {
		t.Fatal(err)
	}
	// Patroni starts PostgreSQL in a session of its own: the postmaster's
	// process group holds it and its children.
	pmGroup, err := syscall.Getpgid(pm)
	if err != nil {
		t.Fatal(err)
	}
	frozen := []int{-old.patroni.cmd.Process.Pid, -pmGroup}
	signal := func(sig syscall.Signal) {
		for _, g := range frozen {
			syscall.Kill(g, sig)
		}
	}
	t.Cleanup(func() { signal(syscall.SIGCONT) }) // a failure mid-freeze leaves nothing stopped
	what := "host frozen (Patroni and PostgreSQL, SIGSTOP), reset by the watchdog after 5s, back after 15s"
	if wake {
		what = "SIGSTOP of Patroni and PostgreSQL for 15s, then SIGCONT"
	}
	f = &threeHostsFault{what: what, old: old.name, at: time.Now()}
	for _, g := range frozen {
		if err := syscall.Kill(g, syscall.SIGSTOP); err != nil {
			t.Fatalf("freeze process group %d: %v", -g, err)
		}
	}
	t.Logf("froze primary %s (the process groups of Patroni, %d, and of PostgreSQL, %d)", old.name, -frozen[0], pmGroup)
	if !wake {
		// What the watchdog patroni.yml requires does to a host whose
		// Patroni stops feeding it: a reset, ttl (10 s) less
		// safety_margin (5 s) after its last keepalive, before the
		// leader lock lapses. The host's PostgreSQL and Patroni die.
		time.Sleep(time.Until(f.at.Add(5 * time.Second)))
		signal(syscall.SIGKILL)
		select {
		case <-old.patroni.exited:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s's Patroni still running 10s after SIGKILL", old.name)
		}
		t.Logf("reset %s as its watchdog would, %v after the freeze", old.name, time.Since(f.at).Round(time.Millisecond))
	}
	d.awaitNewPrimary(t, f, old, old, 0)
	time.Sleep(time.Until(f.at.Add(15 * time.Second)))
	if wake {
		signal(syscall.SIGCONT)
	} else {
		d.startPatroni(t, old) // the host, back from its reset
	}
	f.thawed = time.Now()
	t.Logf("%s back %v after the freeze", old.name, f.thawed.Sub(f.at).Round(time.Millisecond))
	faults = append(faults, f)
	l.awaitSends(t, f, 45*time.Second)
	if !wake {
		// Back from its reset, the former primary rejoins as a standby.
		testutil.CheckFor(t, 90*time.Second, func() error { return d.whole(nil) })
		if err := d.routedTo(f.successor); err != nil {
			t.Error(err)
		}
		f.final = f.successor
		t.Logf("%s rejoined: cluster of 3 whole again %v after it came back, every HAProxy routing to %s",
			old.name, time.Since(f.thawed).Round(time.Millisecond), f.successor)
	} else {
		f.final = d.awaitWoken(t, f, old).name
	}
	time.Sleep(3 * time.Second)

	l.stopSends()
	l.drain(t, 60*time.Second)
	l.stopAll()
	watch.stop()
	for _, f := range faults {
		watch.check(t, f)
	}
	l.report(t, faults)
}

// awaitWoken waits, once the frozen primary old has woken, for one
// primary that every HAProxy routes to alone and that has a standby in
// sync state, so commits complete, and returns it. The woken member
// should have been demoted; Patroni 3.0.2 (Debian 12's) may instead write
// the leader key again as it wakes, demoting its successor, and discard
// what its successor committed (a defect fixed upstream after 3.0.2;
// docs/deploy-three-hosts.md). The loss check tells what that cost.
func (d *threeHosts) awaitWoken(t *testing.T, f *threeHostsFault, old *nsHost) *nsHost {
	t.Helper()
	var final *nsHost
	testutil.CheckFor(t, 90*time.Second, func() error {
		p, err := d.primary()
		if err != nil {
			return err
		}
		if err := d.routedTo(p.name); err != nil {
			return err
		}
		if n, err := syncStandbys(p); err != nil || n < 1 {
			return fmt.Errorf("primary %s: %d standbys in sync state, %v", p.name, n, err)
		}
		final = p
		return nil
	})
	if final == old {
		t.Logf("%s woke and took the leader key back from %s (Patroni %s); every HAProxy routes to it, with a synchronous standby, %v after the thaw",
			old.name, f.successor, patroniVersion(), time.Since(f.thawed).Round(time.Millisecond))
	} else {
		t.Logf("%s woke and was demoted; every HAProxy routes to %s, with a synchronous standby, %v after the thaw",
			old.name, final.name, time.Since(f.thawed).Round(time.Millisecond))
	}
	return final
}

// patroniVersion is what `patroni --version` says.
func patroniVersion() string {
	out, err := exec.Command("patroni", "--version").Output()
	if err != nil {
		return "of unknown version"
	}
	return strings.TrimSpace(strings.TrimPrefix(string(out), "patroni "))
}

// syncStandbys counts the standbys in sync state in p's
// pg_stat_replication, asked as the postgres user on p's socket.
func syncStandbys(p *nsHost) (int, error) {
	out, err := p.psql("postgres", `SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'`)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(out))
}

// psql runs one query on h's PostgreSQL as the postgres user, over its
// socket, from inside h's namespace, and returns the unaligned rows.
func (h *nsHost) psql(db, query string) (string, error) {
	out, err := exec.Command("ip", "netns", "exec", h.ns, "setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups",
		"psql", "-X", "-At", "-h", filepath.Join(h.root, "run", "baton-ha"), "-d", db, "-c", query).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("psql on %s: %v: %s", h.name, err, out)
	}
	return string(out), nil
}

// checkBatonRole asserts that the role Baton connects as is no superuser,
// cannot create databases or roles, and owns the schema its tables are in.
func checkBatonRole(t *testing.T, d *threeHosts) {
	t.Helper()
	p, err := d.primary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.psql("baton", `SELECT r.rolsuper, r.rolcreatedb, r.rolcreaterole, n.nspname, pg_get_userbyid(n.nspowner),
			(SELECT count(*) FROM pg_tables WHERE tableowner = 'baton' AND schemaname <> 'baton')
		FROM pg_roles r, pg_namespace n
		WHERE r.rolname = 'baton' AND n.oid = (SELECT relnamespace FROM pg_class WHERE relname = 'baton_messages')`)
	if err != nil {
		t.Fatal(err)
	}
	if got := out; got != "f|f|f|baton|baton|0\n" {
		t.Errorf("Baton's role (superuser|createdb|createrole|its tables' schema|that schema's owner|tables elsewhere): %q, want f|f|f|baton|baton|0", got)
	}
}

// threeHostsFault is one fault of the primary and what followed it.
type threeHostsFault struct {
	what      string
	old       string    // the primary faulted
	at        time.Time // when
	successor string    // the primary after it
	promoted  time.Time // when Patroni first named it
	routed    time.Time // when every HAProxy routed to it alone
	thawed    time.Time // a freeze's end
	final     string    // the primary once the frozen one woke
	resumed   []time.Duration
}

// awaitNewPrimary waits for Patroni to name a primary other than old and
// for every host's HAProxy to route to it alone; frozen, if not nil, is
// not asked (its REST API does not answer).
//
// killed, if not 0, is old's postmaster, killed: old then counts too once
// Patroni runs another postmaster there as primary. Patroni 3.0.2 (Debian
// 12's) restarts a primary whose postmaster died in place, rather than
// give up its lock, when its cycle saw the standbys' connections end
// before it saw the postmaster gone: it first takes the synchronous
// standby's right to be promoted away ("No standbys available!"), and in
// strict synchronous mode no member may then be promoted. What was
// acknowledged is on the restarted primary either way.
func (d *threeHosts) awaitNewPrimary(t *testing.T, f *threeHostsFault, old, frozen *nsHost, killed int) {
	t.Helper()
	testutil.CheckFor(t, 60*time.Second, func() error {
		for _, h := range d.hosts {
			if h == frozen || h == old && (killed == 0 || !restartedAs(old, killed)) {
				continue
			}
			code, _, err := d.get("https://" + net.JoinHostPort(h.addr, "8008") + "/primary")
			if err == nil && code == http.StatusOK {
				f.successor, f.promoted = h.name, time.Now()
				return nil
			}
		}
		return fmt.Errorf("no member but %s is primary", old.name)
	})
	how := "promoted"
	if f.successor == old.name {
		how = "restarted the killed primary in place as"
	}
	t.Logf("%s: Patroni %s %s %v after it", f.what, how, f.successor, f.promoted.Sub(f.at).Round(time.Millisecond))
	testutil.CheckFor(t, 30*time.Second, func() error { return d.routedTo(f.successor) })
	f.routed = time.Now()
	t.Logf("%s: every HAProxy routes PostgreSQL to %s %v after it", f.what, f.successor, f.routed.Sub(f.at).Round(time.Millisecond))
}

// restartedAs reports whether h runs a postmaster other than killed.
func restartedAs(h *nsHost, killed int) bool {
	pid, err := h.postmaster()
	return err == nil && pid != killed
}

// threeHostsLoad is the SDK's traffic: a producer and a consumer per
// host's HAProxy.
type threeHostsLoad struct {
	clients  []*sqs.Client
	queueURL string
	wg       sync.WaitGroup
	stopSend chan struct{}
	stopRecv chan struct{}

	mu       sync.Mutex
	acked    map[string]int         // body -> producer, for sends acknowledged
	seen     map[string]bool        // bodies received
	ackTimes [][]time.Time          // per producer, when each send was acknowledged
	outcomes map[string]map[int]int // "send", "receive", "delete" -> HTTP status -> count (0: no answer)
	others   []string               // the first errors that were not 503
}

func (l *threeHostsLoad) start(ctx context.Context) {
	l.stopSend, l.stopRecv = make(chan struct{}), make(chan struct{})
	l.acked, l.seen, l.outcomes = map[string]int{}, map[string]bool{}, map[string]map[int]int{}
	l.ackTimes = make([][]time.Time, len(l.clients))
	for i, c := range l.clients {
		l.wg.Go(func() { l.produce(ctx, i, c) })
		l.wg.Go(func() { l.consume(ctx, c) })
	}
}

// note counts a call's outcome and reports whether it succeeded.
func (l *threeHostsLoad) note(what string, err error) bool {
	status := http.StatusOK
	if err != nil {
		status, _ = errorStatus(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.outcomes[what] == nil {
		l.outcomes[what] = map[int]int{}
	}
	l.outcomes[what][status]++
	if err != nil && status != http.StatusServiceUnavailable && len(l.others) < 20 {
		l.others = append(l.others, fmt.Sprintf("%s %s: %v", time.Now().Format(time.StampMilli), what, err))
	}
	return err == nil
}

// produce sends batches of ten, at most about five a second, until
// stopSend (or 100000 batches).
func (l *threeHostsLoad) produce(ctx context.Context, p int, c *sqs.Client) {
	for b := range 100000 {
		select {
		case <-l.stopSend:
			return
		case <-ctx.Done():
			return
		default:
		}
		entries := make([]types.SendMessageBatchRequestEntry, 10)
		for i := range entries {
			entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(fmt.Sprintf("p%d-%06d-%d", p, b, i))}
		}
		out, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &l.queueURL, Entries: entries})
		if !l.note("send", err) {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		now := time.Now()
		l.mu.Lock()
		for _, ok := range out.Successful {
			i, _ := strconv.Atoi(aws.ToString(ok.Id))
			l.acked[aws.ToString(entries[i].MessageBody)] = p
		}
		for _, f := range out.Failed {
			l.others = append(l.others, fmt.Sprintf("send entry failed: %s %s", aws.ToString(f.Code), aws.ToString(f.Message)))
		}
		l.ackTimes[p] = append(l.ackTimes[p], now)
		l.mu.Unlock()
		time.Sleep(200 * time.Millisecond)
	}
}

// consume receives and deletes until stopRecv (or 100000 receives).
func (l *threeHostsLoad) consume(ctx context.Context, c *sqs.Client) {
	for range 100000 {
		select {
		case <-l.stopRecv:
			return
		case <-ctx.Done():
			return
		default:
		}
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &l.queueURL, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if !l.note("receive", err) {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if len(out.Messages) == 0 {
			continue
		}
		entries := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
		l.mu.Lock()
		for i, m := range out.Messages {
			l.seen[aws.ToString(m.Body)] = true
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		l.mu.Unlock()
		_, err = c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &l.queueURL, Entries: entries})
		l.note("delete", err)
	}
}

// awaitSends waits until every producer has had a send acknowledged after
// f's new primary was routed to, and records when each producer's sends
// resumed: the end of the longest pause between its acknowledgements from
// a second before the fault on.
func (l *threeHostsLoad) awaitSends(t *testing.T, f *threeHostsFault, bound time.Duration) {
	t.Helper()
	after := f.routed
	if f.thawed.After(after) {
		after = f.thawed
	}
	testutil.CheckFor(t, bound, func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		for p, acks := range l.ackTimes {
			if len(acks) == 0 || !acks[len(acks)-1].After(after) {
				return fmt.Errorf("%s: no send through host %d's HAProxy acknowledged since", f.what, p+1)
			}
		}
		return nil
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	f.resumed = make([]time.Duration, len(l.ackTimes))
	for p, acks := range l.ackTimes {
		var prev, end time.Time
		longest := time.Duration(-1)
		for _, at := range acks {
			if at.After(f.at.Add(-time.Second)) {
				if !prev.IsZero() && at.Sub(prev) > longest {
					longest, end = at.Sub(prev), at
				}
				prev = at
			}
		}
		f.resumed[p] = end.Sub(f.at)
	}
	t.Logf("%s: sends acknowledged again through each host's HAProxy after %v", f.what, roundAll(f.resumed))
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

func (l *threeHostsLoad) stopSends() { close(l.stopSend) }

// drain waits until every acknowledged send has been received.
func (l *threeHostsLoad) drain(t *testing.T, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		if len(l.lost()) == 0 {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// lost lists the acknowledged sends not received, sorted.
func (l *threeHostsLoad) lost() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lost []string
	for body := range l.acked {
		if !l.seen[body] {
			lost = append(lost, body)
		}
	}
	sort.Strings(lost)
	return lost
}

func (l *threeHostsLoad) stopAll() {
	close(l.stopRecv)
	l.wg.Wait()
}

// report fails t for lost sends and for answers other than success and
// 503, and logs the figures.
func (l *threeHostsLoad) report(t *testing.T, faults []*threeHostsFault) {
	t.Helper()
	lost := l.lost()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(lost) > 0 {
		t.Errorf("%d of %d acknowledged sends never received, the first: %v", len(lost), len(l.acked), lost[:min(10, len(lost))])
	}
	for _, e := range l.others {
		t.Errorf("a call answered other than success or 503: %s", e)
	}
	for _, f := range faults {
		t.Logf("%s of %s: %s primary after %v, routed to by every HAProxy after %v, sends back after %v; primary at the end: %s",
			f.what, f.old, f.successor, f.promoted.Sub(f.at).Round(time.Millisecond), f.routed.Sub(f.at).Round(time.Millisecond), roundAll(f.resumed), f.final)
	}
	t.Logf("%d sends acknowledged, %d received, %d lost; outcomes (call: HTTP status: count, 0 for no answer): %v",
		len(l.acked), len(l.seen), len(lost), l.outcomes)
}

// healthWatch asks every node's /healthz every 250 ms.
type healthWatch struct {
	hosts []*nsHost
	done  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	seen  [][]healthSample // per host
}

type healthSample struct {
	at   time.Time
	code int // 0: no answer
}

func watchHealth(ctx context.Context, hosts []*nsHost) *healthWatch {
	w := &healthWatch{hosts: hosts, done: make(chan struct{}), seen: make([][]healthSample, len(hosts))}
	for i, h := range hosts {
		w.wg.Go(func() {
			tick := time.NewTicker(250 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-w.done:
					return
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				at := time.Now()
				code, _ := nodeHealth("http://" + net.JoinHostPort(h.addr, "9325"))
				w.mu.Lock()
				w.seen[i] = append(w.seen[i], healthSample{at: at, code: code})
				w.mu.Unlock()
			}
		})
	}
	return w
}

func (w *healthWatch) stop() {
	close(w.done)
	w.wg.Wait()
}

// check fails t unless /healthz told the truth around f: for a freeze,
// every node failed it while no primary could be reached (from 6 s after
// the freeze, HAProxy having counted the frozen member down, until the
// new primary was named), and failed it at least once then; after any
// fault, every node passed it again within 30 s of every HAProxy routing
// to the new primary.
func (w *healthWatch) check(t *testing.T, f *threeHostsFault) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, h := range w.hosts {
		failed, passedAgain := 0, time.Time{}
		for _, s := range w.seen[i] {
			if s.at.After(f.at) && s.at.Before(f.promoted) {
				if s.code != http.StatusOK {
					failed++
				} else if !f.thawed.IsZero() && s.at.After(f.at.Add(6*time.Second)) {
					t.Errorf("%s: node on %s answered /healthz 200 %v after it, with no primary to reach", f.what, h.name, s.at.Sub(f.at).Round(time.Millisecond))
				}
			}
			if s.at.After(f.routed) && s.code == http.StatusOK && passedAgain.IsZero() {
				passedAgain = s.at
			}
		}
		if !f.thawed.IsZero() && failed == 0 {
			t.Errorf("%s: node on %s never failed /healthz while no primary could be reached", f.what, h.name)
		}
		if passedAgain.IsZero() || passedAgain.Sub(f.routed) > 30*time.Second {
			t.Errorf("%s: node on %s did not pass /healthz within 30s of the new primary being routed to", f.what, h.name)
			continue
		}
		t.Logf("%s: node on %s: /healthz failed %d times (every 250 ms) until the new primary, passed again %v after the fault",
			f.what, h.name, failed, passedAgain.Sub(f.at).Round(time.Millisecond))
	}
}
