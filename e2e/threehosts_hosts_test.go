package e2e_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/testutil"
)

// The hosts of TestThreeHosts: a network namespace each, on a bridge of
// the test's own in the root namespace, which holds the bridge's address
// and nothing else. Every address is private to this machine: no packet
// leaves it.

// threeHosts is the deployment of deploy/three-hosts/ on three namespaces.
type threeHosts struct {
	dir   string // generate.sh's OUT: ca/, secrets/, and a root per host
	hosts []*nsHost
	// operator is an HTTPS client with the operator's certificate, for
	// etcd's and Patroni's APIs.
	operator   *http.Client
	patroniBin string
}

// nsHost is one host: its namespace, address and root directory.
type nsHost struct {
	name, ns, addr string
	root           string // where the host's paths begin (the inventory's root)
	patroni        *daemon
}

func (h *nsHost) etc(name string) string { return filepath.Join(h.root, "etc", "baton-ha", name) }

func (h *nsHost) dataDir() string {
	return filepath.Join(h.root, "var", "lib", "baton-ha", "postgresql")
}

// mustRun runs a command and fails t with its output if it fails.
func mustRun(t *testing.T, prog string, args ...string) string {
	t.Helper()
	out, err := exec.Command(prog, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", prog, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// makeNetwork makes a bridge with a free 10.77.N.0/24 and three namespaces
// on it at .1, .2 and .3, and removes them when t ends.
func makeNetwork(t *testing.T) (bridgeAddr string, hosts []*nsHost) {
	t.Helper()
	used := mustRun(t, "ip", "-o", "-4", "addr")
	tag := fmt.Sprintf("b3h%d", os.Getpid()%100000)
	subnet := -1
	for i := range 200 {
		n := (os.Getpid()+i)%200 + 20
		if !strings.Contains(used, fmt.Sprintf(" 10.77.%d.", n)) {
			subnet = n
			break
		}
	}
	if subnet < 0 {
		t.Fatal("no free 10.77.N.0/24 for the test's hosts")
	}
	bridge := tag + "br"
	t.Cleanup(func() {
		for i := 1; i <= 3; i++ {
			exec.Command("ip", "netns", "del", fmt.Sprintf("%s-%d", tag, i)).Run()
		}
		exec.Command("ip", "link", "del", bridge).Run()
	})
	bridgeAddr = fmt.Sprintf("10.77.%d.254", subnet)
	mustRun(t, "ip", "link", "add", bridge, "type", "bridge")
	mustRun(t, "ip", "addr", "add", bridgeAddr+"/24", "dev", bridge)
	mustRun(t, "ip", "link", "set", bridge, "up")
	for i := 1; i <= 3; i++ {
		h := &nsHost{name: fmt.Sprintf("db%d", i), ns: fmt.Sprintf("%s-%d", tag, i), addr: fmt.Sprintf("10.77.%d.%d", subnet, i)}
		outer, inner := fmt.Sprintf("%sv%d", tag, i), fmt.Sprintf("%si%d", tag, i)
		mustRun(t, "ip", "netns", "add", h.ns)
		mustRun(t, "ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
		mustRun(t, "ip", "link", "set", inner, "netns", h.ns)
		mustRun(t, "ip", "link", "set", outer, "master", bridge, "up")
		mustRun(t, "ip", "-n", h.ns, "addr", "add", h.addr+"/24", "dev", inner)
		mustRun(t, "ip", "-n", h.ns, "link", "set", inner, "up")
		mustRun(t, "ip", "-n", h.ns, "link", "set", "lo", "up")
		hosts = append(hosts, h)
	}
	return bridgeAddr, hosts
}

// generate writes an inventory of hosts and runs deploy/three-hosts/generate.sh
// on it, each host's root a directory of dir, with no watchdog: this
// machine's would reset it.
func generate(t *testing.T, dir string, hosts []*nsHost) {
	t.Helper()
	var inv strings.Builder
	for _, h := range hosts {
		fmt.Fprintf(&inv, "host %s %s\n", h.name, h.addr)
		h.root = filepath.Join(dir, h.name)
	}
	fmt.Fprintf(&inv, "watchdog off\nroot %s/{host}\n", dir)
	invPath := filepath.Join(dir, "inventory")
	if err := os.WriteFile(invPath, []byte(inv.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, filepath.Join(moduleRoot, "deploy", "three-hosts", "generate.sh"), invPath, dir)
	t.Logf("generate.sh: %s", strings.TrimSpace(out))
}

// install does on each host what docs/deploy-three-hosts.md has the
// operator do: the directories the configs name, owned by the user that
// writes them (here postgres for all: etcd, HAProxy and Baton run as root).
func (d *threeHosts) install(t *testing.T, uid, gid int) {
	t.Helper()
	for _, h := range d.hosts {
		for _, sub := range []string{"var/lib/baton-ha", "run/baton-ha"} {
			if err := os.MkdirAll(filepath.Join(h.root, sub), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		err := filepath.Walk(h.root, func(path string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(path, uid, gid)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// operatorClient is an HTTPS client that trusts the deployment's CA and
// shows the operator's certificate.
func operatorClient(t *testing.T, dir string) *http.Client {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "ca", "operator.crt"), filepath.Join(dir, "ca", "operator.key"))
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(filepath.Join(dir, "ca", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("ca.crt: no certificate")
	}
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}},
		// A frozen member must not hold the checks' connections.
		DisableKeepAlives: true,
	}}
}

// envFile reads a file's lines, less blank lines and comments: KEY=VALUE
// lines of an environment file, say.
func envFile(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			env = append(env, l)
		}
	}
	return env
}

// inNS starts prog in h's namespace (ip netns exec, then setpriv to user
// when not empty: each execs the next, so the daemon's PID is the one
// started).
func (d *threeHosts) inNS(t *testing.T, h *nsHost, what, user string, env []string, prog string, args ...string) *daemon {
	t.Helper()
	argv := []string{"netns", "exec", h.ns}
	if user != "" {
		argv = append(argv, "setpriv", "--reuid="+user, "--regid="+user, "--init-groups")
	}
	argv = append(append(argv, prog), args...)
	return startDaemon(t, what+" "+h.name, filepath.Join(d.dir, what+"-"+h.name+".log"), nil, env, "ip", argv...)
}

// get asks one of the deployment's HTTPS APIs.
func (d *threeHosts) get(url string) (int, []byte, error) {
	resp, err := d.operator.Get(url)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// primary returns the host whose Patroni answers GET /primary with 200.
func (d *threeHosts) primary() (*nsHost, error) {
	var errs []error
	for _, h := range d.hosts {
		code, _, err := d.get("https://" + net.JoinHostPort(h.addr, "8008") + "/primary")
		if err == nil && code == http.StatusOK {
			return h, nil
		}
		errs = append(errs, fmt.Errorf("%s: %d %v", h.name, code, err))
	}
	return nil, fmt.Errorf("no primary: %w", errors.Join(errs...))
}

// whole returns an error unless the cluster, as a member's GET /cluster
// tells it, has a running leader, a streaming synchronous standby and a
// third member streaming. The hosts skipped (frozen) are not asked.
func (d *threeHosts) whole(skip *nsHost) error {
	var errs []error
	for _, h := range d.hosts {
		if h == skip {
			continue
		}
		_, b, err := d.get("https://" + net.JoinHostPort(h.addr, "8008") + "/cluster")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var cs clusterState
		if err := json.Unmarshal(b, &cs); err != nil {
			return err
		}
		roles := map[string]int{}
		for _, m := range cs.Members {
			if m.State == "running" || m.State == "streaming" {
				roles[m.Role]++
			}
		}
		if roles["leader"] != 1 || roles["sync_standby"] != 1 || roles["replica"] != 1 {
			return fmt.Errorf("cluster not whole: %+v", cs.Members)
		}
		return nil
	}
	return errors.Join(errs...)
}

// postmaster returns the PID of h's postmaster, from its postmaster.pid,
// if that process is a running postgres.
func (h *nsHost) postmaster() (int, error) {
	b, err := os.ReadFile(filepath.Join(h.dataDir(), "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	if err != nil {
		return 0, fmt.Errorf("%s: postmaster.pid: %w", h.name, err)
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
		return 0, fmt.Errorf("%s: postmaster %d not running", h.name, pid)
	}
	return pid, nil
}

// killPostgresOnCleanup ends, when t ends, every host's postmaster and its
// children by process group: Patroni starts PostgreSQL in a session of its
// own, which its own group's end does not reach. Registered before the
// Patroni daemons, it runs after they were stopped.
func (d *threeHosts) killPostgresOnCleanup(t *testing.T) {
	t.Cleanup(func() {
		for _, h := range d.hosts {
			pid, err := h.postmaster()
			if err != nil {
				continue
			}
			if g, err := syscall.Getpgid(pid); err == nil && g > 1 {
				syscall.Kill(-g, syscall.SIGCONT)
				syscall.Kill(-g, syscall.SIGKILL)
			}
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// haproxyPrimaries returns, per host, the members its HAProxy's postgres
// proxy sends connections to (from `show stat` on its stats socket): UP,
// and "UP 1/2", a member with a failed check that still counts as up.
// HAProxy counts every member up at start until its checks fail.
func (d *threeHosts) haproxyPrimaries() (map[string][]string, error) {
	up := map[string][]string{}
	for _, h := range d.hosts {
		conn, err := net.DialTimeout("unix", filepath.Join(h.root, "run", "baton-ha", "haproxy.sock"), time.Second)
		if err != nil {
			return nil, err
		}
		conn.SetDeadline(time.Now().Add(3 * time.Second))
		io.WriteString(conn, "show stat\n")
		out, err := io.ReadAll(conn)
		conn.Close()
		if err != nil {
			return nil, err
		}
		rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(string(out), "# "))).ReadAll()
		if err != nil || len(rows) == 0 {
			return nil, fmt.Errorf("%s: show stat: %q: %v", h.name, out, err)
		}
		col := map[string]int{}
		for i, name := range rows[0] {
			col[name] = i
		}
		up[h.name] = []string{}
		for _, r := range rows[1:] {
			if len(r) == len(rows[0]) && r[col["pxname"]] == "postgres" && strings.HasPrefix(r[col["status"]], "UP") && strings.HasPrefix(r[col["svname"]], "db") {
				up[h.name] = append(up[h.name], r[col["svname"]])
			}
		}
	}
	return up, nil
}

// routedTo returns an error unless every host's HAProxy sends PostgreSQL
// connections to member alone.
func (d *threeHosts) routedTo(member string) error {
	up, err := d.haproxyPrimaries()
	if err != nil {
		return err
	}
	for host, members := range up {
		if len(members) != 1 || members[0] != member {
			return fmt.Errorf("HAProxy on %s counts %v up for PostgreSQL, want %s alone", host, members, member)
		}
	}
	return nil
}

// start brings the deployment up as the docs say: etcd on every host, the
// first Patroni member (which initialises the cluster and runs the
// bootstrap script), the other two, then HAProxy and Baton on every host.
func (d *threeHosts) start(t *testing.T, patroniBin, etcdBin, haproxyBin string) {
	t.Helper()
	env := []string{"PATH=/usr/sbin:/usr/bin:/bin", "LC_ALL=C.UTF-8", "LANG=C.UTF-8"}
	for _, h := range d.hosts {
		d.inNS(t, h, "etcd", "", append(env, "HOME="+h.root), etcdBin, "--config-file", h.etc("etcd.yml"))
	}
	for _, h := range d.hosts {
		testutil.CheckFor(t, 30*time.Second, func() error {
			code, b, err := d.get("https://" + net.JoinHostPort(h.addr, "2379") + "/health")
			if err != nil || code != http.StatusOK || !strings.Contains(string(b), `"true"`) {
				return fmt.Errorf("etcd on %s: %d %s %v", h.name, code, b, err)
			}
			return nil
		})
	}
	d.killPostgresOnCleanup(t)
	d.patroniBin = patroniBin
	for i, h := range d.hosts {
		d.startPatroni(t, h)
		if i == 0 {
			testutil.CheckFor(t, 90*time.Second, func() error {
				if p, err := d.primary(); err != nil || p != h {
					return fmt.Errorf("%s not primary yet: %v", h.name, err)
				}
				return nil
			})
		}
	}
	testutil.CheckFor(t, 120*time.Second, func() error { return d.whole(nil) })
	for _, h := range d.hosts {
		d.inNS(t, h, "haproxy", "", env, haproxyBin, "-db", "-f", h.etc("haproxy.cfg"))
	}
	testutil.CheckFor(t, 20*time.Second, func() error { return d.routedTo(d.hosts[0].name) })
	for _, h := range d.hosts {
		batonEnv := append(append([]string{}, env...), envFile(t, h.etc("baton.env"))...)
		d.inNS(t, h, "baton", "", append(batonEnv, "HOME="+h.root), batonBin, "serve", "--config", h.etc("baton.yaml"))
	}
	for _, h := range d.hosts {
		testutil.CheckFor(t, 60*time.Second, func() error {
			for _, port := range []string{"9325", "9324"} { // the node, then HAProxy in front of the nodes
				code, err := nodeHealth("http://" + net.JoinHostPort(h.addr, port))
				if err != nil || code != http.StatusOK {
					return fmt.Errorf("%s:%s/healthz: %d %v", h.name, port, code, err)
				}
			}
			return nil
		})
	}
}

// startPatroni starts h's Patroni as the postgres user, with its
// passwords in its environment (patroni.env).
func (d *threeHosts) startPatroni(t *testing.T, h *nsHost) {
	t.Helper()
	env := append([]string{"PATH=/usr/sbin:/usr/bin:/bin", "LC_ALL=C.UTF-8", "LANG=C.UTF-8", "HOME=" + h.root}, envFile(t, h.etc("patroni.env"))...)
	h.patroni = d.inNS(t, h, "patroni", "postgres", env, d.patroniBin, h.etc("patroni.yml"))
}

// nodeHealth asks base's GET /healthz.
func nodeHealth(base string) (int, error) {
	resp, err := (&http.Client{Timeout: 3 * time.Second}).Get(base + "/healthz")
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// credentialsOf reads the first key of a --credentials-file.
func credentialsOf(t *testing.T, path string) (id, secret string) {
	t.Helper()
	for _, l := range envFile(t, path) {
		if f := strings.Fields(l); len(f) == 3 {
			return f[0], f[1]
		}
	}
	t.Fatalf("%s: no key", path)
	return "", ""
}
