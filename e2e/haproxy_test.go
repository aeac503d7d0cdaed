package e2e_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/skipnote"
)

// requireHAProxyEnv turns a missing haproxy into a failure.
const requireHAProxyEnv = "BATON_REQUIRE_HAPROXY"

// loadBalancer is HAProxy running the repository's deploy/haproxy.cfg,
// unchanged, in front of two nodes.
type loadBalancer struct {
	URL   string // http://127.0.0.1:<port>, what clients use
	stats string // its stats socket
}

// needHAProxy returns the haproxy binary, or skips or fails t without one.
func needHAProxy(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		componentUnavailable(t, "HAProxy", requireHAProxyEnv, "haproxy not installed: "+err.Error())
	}
	return bin
}

// startHAProxy runs bin with deploy/haproxy.cfg, its addresses set through
// the environment variables the file reads, and waits until it serves and
// counts both nodes up.
func startHAProxy(t *testing.T, bin string, node1, node2 *batonProcess) *loadBalancer {
	t.Helper()
	dir := t.TempDir()
	lb := &loadBalancer{URL: fmt.Sprintf("http://127.0.0.1:%d", freePorts(t, 1)[0]), stats: filepath.Join(dir, "stats.sock")}
	env := []string{"PATH=/usr/sbin:/usr/bin:/bin",
		"BATON_LB_LISTEN=" + strings.TrimPrefix(lb.URL, "http://"),
		"BATON_NODE1=" + strings.TrimPrefix(node1.URL, "http://"),
		"BATON_NODE2=" + strings.TrimPrefix(node2.URL, "http://"),
		"BATON_LB_STATS_SOCKET=" + lb.stats,
	}
	// -db: in the foreground, logging to standard output.
	startDaemon(t, "haproxy", filepath.Join(dir, "haproxy.log"), nil, env, bin, "-db", "-f", filepath.Join(moduleRoot, "deploy", "haproxy.cfg"))
	testutil.CheckFor(t, 20*time.Second, func() error { return lb.wantStatus("UP") })
	return lb
}

// serverStat is one node's line of HAProxy's `show stat`.
type serverStat struct {
	status   string // UP, DOWN, or a transition such as "UP 1/2"
	sessions int    // open now
}

// servers asks HAProxy's stats socket for its nodes' state.
func (lb *loadBalancer) servers() (map[string]serverStat, error) {
	conn, err := net.DialTimeout("unix", lb.stats, time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "show stat\n"); err != nil {
		return nil, err
	}
	out, err := io.ReadAll(conn)
	if err != nil {
		return nil, err
	}
	rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(string(out), "# "))).ReadAll()
	if err != nil || len(rows) == 0 {
		return nil, fmt.Errorf("show stat: %q: %v", out, err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	stats := map[string]serverStat{}
	for _, r := range rows[1:] {
		if len(r) != len(rows[0]) || r[col["pxname"]] != "baton" || !strings.HasPrefix(r[col["svname"]], "baton") {
			continue
		}
		n, _ := strconv.Atoi(r[col["scur"]])
		stats[r[col["svname"]]] = serverStat{status: r[col["status"]], sessions: n}
	}
	if len(stats) != 2 {
		return nil, fmt.Errorf("show stat lists nodes %v, want baton1 and baton2", stats)
	}
	return stats, nil
}

// wantStatus returns an error unless both nodes have the status.
func (lb *loadBalancer) wantStatus(status string) error {
	stats, err := lb.servers()
	if err != nil {
		return err
	}
	for name, s := range stats {
		if s.status != status {
			return fmt.Errorf("HAProxy counts %s %s, want %s", name, s.status, status)
		}
	}
	return nil
}

// TestHAProxy runs HAProxy with deploy/haproxy.cfg in front of two
// `baton serve` nodes on one PostgreSQL and drives clients through it:
//
//   - 150 long polls, each signed with a key of its own, all wait at once
//     through the one proxy address, under a bound of 50 per client on
//     each node, and are all answered (keyed by the proxy's address, as
//     the bound once was, 50 of them would have been refused);
//   - the bound still holds per key behind the proxy: 101 long polls of
//     one key, more than the two nodes take, are partly refused;
//   - with the database stopped for longer than the nodes retry, HAProxy
//     takes both nodes out of the rotation by their /healthz, clients get
//     503 and never 500, a long poll waiting through the proxy keeps
//     waiting and is answered once the database is back, and the proxy
//     serves again soon after.
func TestHAProxy(t *testing.T) {
	skipnote.SkipUnlessLong(t, "HAProxy in front of two nodes, the database stopped")
	t.Parallel()
	const (
		polls = 150
		bound = 50 // per client, on each node
	)
	bin := needHAProxy(t)
	pg := pgtest.MustStart(t)
	url := pg.MustDatabase(t)
	keys := []string{mnKeyID}
	for i := range polls {
		keys = append(keys, fmt.Sprintf("AKIDPOLL%03d", i))
	}
	var creds strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&creds, "%s secret %s\n", k, account)
	}
	credsFile := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(credsFile, []byte(creds.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var nodes [2]*batonProcess
	for i := range nodes {
		nodes[i] = startBatonArgs(t, "--account-id", account, "--store", url, "--credentials-file", credsFile,
			"--max-long-polls-per-client", strconv.Itoa(bound), "--trust-proxy", "127.0.0.1")
	}
	lb := startHAProxy(t, bin, nodes[0], nodes[1])
	hc := &http.Client{Timeout: 40 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2 * polls}}
	admin := keyClient(lb.URL, mnKeyID, hc)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	queueURL := func(name string) string {
		out, err := admin.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatalf("create queue %s through HAProxy: %v", name, err)
		}
		return aws.ToString(out.QueueUrl)
	}
	pollQueue, outageQueue := queueURL("lb-polls"), queueURL("lb-outage")
	if !strings.HasPrefix(pollQueue, lb.URL+"/") {
		t.Fatalf("queue URL %s is not the proxy's (%s)", pollQueue, lb.URL)
	}

	t.Run("150 long polls through one address", func(t *testing.T) {
		type answer struct {
			body string
			err  error
		}
		answers := make(chan answer, polls)
		for i := range polls {
			c := keyClient(lb.URL, keys[1+i], hc)
			go func() {
				out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &pollQueue, WaitTimeSeconds: 20, MaxNumberOfMessages: 1})
				a := answer{err: err}
				if err == nil && len(out.Messages) != 1 {
					a.err = fmt.Errorf("%d messages, want 1", len(out.Messages))
				}
				if a.err == nil {
					a.body = aws.ToString(out.Messages[0].Body)
				}
				answers <- a
			}()
		}
		// All wait at once, on both nodes: HAProxy's open sessions.
		var waiting map[string]serverStat
		testutil.CheckFor(t, 20*time.Second, func() error {
			select {
			case a := <-answers:
				t.Fatalf("a long poll ended before any message was sent: %v", a.err)
			default:
			}
			stats, err := lb.servers()
			if err != nil {
				return err
			}
			if n := stats["baton1"].sessions + stats["baton2"].sessions; n < polls {
				return fmt.Errorf("%d long polls open through HAProxy, want %d: %v", n, polls, stats)
			}
			waiting = stats
			return nil
		})
		t.Logf("%d long polls waiting through HAProxy: %d on node 1, %d on node 2", polls, waiting["baton1"].sessions, waiting["baton2"].sessions)
		for i := 0; i < polls; i += 10 {
			entries := make([]types.SendMessageBatchRequestEntry, 10)
			for j := range entries {
				entries[j] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(fmt.Sprintf("m%03d", i+j))}
			}
			if _, err := admin.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &pollQueue, Entries: entries}); err != nil {
				t.Fatalf("send through HAProxy: %v", err)
			}
		}
		got := map[string]bool{}
		for range polls {
			select {
			case a := <-answers:
				if a.err != nil {
					t.Errorf("long poll: %v", a.err)
				} else if got[a.body] {
					t.Errorf("message %s handed to two long polls", a.body)
				}
				got[a.body] = true
			case <-time.After(30 * time.Second):
				t.Fatalf("%d of %d long polls answered", len(got), polls)
			}
		}
	})

	t.Run("the bound holds per key", func(t *testing.T) {
		const n = 2*bound + 1 // more than both nodes take from one key
		errs := make(chan error, n)
		for range n {
			go func() {
				_, err := admin.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &pollQueue, WaitTimeSeconds: 5})
				errs <- err
			}()
		}
		refused := 0
		for range n {
			err := <-errs
			if status, code := errorStatus(err); err != nil && (status != http.StatusForbidden || code != "RequestThrottled") {
				t.Errorf("long poll of one key: %v", err)
			} else if err != nil {
				refused++
			}
		}
		t.Logf("%d long polls of one key through HAProxy: %d refused with RequestThrottled", n, refused)
		if refused == 0 {
			t.Errorf("none of %d long polls of one key refused; two nodes take %d", n, 2*bound)
		}
	})

	t.Run("database outage", func(t *testing.T) {
		polled := make(chan outagePoll, 1)
		pollStart := time.Now()
		go func() { polled <- longPoll(ctx, admin, outageQueue, 0) }()
		time.Sleep(time.Second) // for the poll to reach its node

		pg.Down()
		down := time.Now()
		// Sends until the nodes' retries have run out and for a while after
		// HAProxy has counted both nodes down: every one is refused with
		// 503, by a node (ServiceUnavailable, after its retries) or by
		// HAProxy itself once neither node passes /healthz.
		answered := map[string]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				for time.Since(down) < storeRetryBound+2*time.Second {
					_, err := admin.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &outageQueue, MessageBody: aws.String("during")})
					status, code := errorStatus(err)
					mu.Lock()
					answered[fmt.Sprintf("%d %s", status, code)]++
					mu.Unlock()
					if status != http.StatusServiceUnavailable {
						t.Errorf("send through HAProxy during the outage: %v, want HTTP 503", err)
					}
					time.Sleep(200 * time.Millisecond)
				}
			})
		}
		testutil.CheckFor(t, 2*storeRetryBound, func() error { return lb.wantStatus("DOWN") })
		t.Logf("HAProxy counted both nodes down %v after the database stopped", time.Since(down).Round(time.Millisecond))
		wg.Wait()
		if err := pg.Up(ctx); err != nil {
			t.Fatal(err)
		}
		up := time.Now()
		t.Logf("PostgreSQL down for %v; sends through HAProxy answered (HTTP status and code: count) %v", up.Sub(down).Round(time.Millisecond), answered)

		testutil.CheckFor(t, 30*time.Second, func() error {
			_, err := admin.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &outageQueue, MessageBody: aws.String("after")})
			if status, _ := errorStatus(err); err != nil && status != http.StatusServiceUnavailable {
				t.Errorf("send through HAProxy after the outage: %v", err)
			}
			return err
		})
		t.Logf("HAProxy serving again %v after PostgreSQL started", time.Since(up).Round(time.Millisecond))
		testutil.CheckFor(t, 10*time.Second, func() error { return lb.wantStatus("UP") })
		select {
		case r := <-polled:
			if r.err != nil || r.n != 1 {
				t.Errorf("long poll through HAProxy waiting at the outage: %d messages after %v, %v; want one, answered after the outage",
					r.n, r.answered.Sub(pollStart).Round(time.Millisecond), r.err)
			} else {
				t.Logf("long poll through HAProxy waiting at the outage answered %v after it began", r.answered.Sub(pollStart).Round(time.Millisecond))
			}
		case <-time.After(30 * time.Second):
			t.Error("the long poll through HAProxy waiting at the outage never answered")
		}
	})
}
