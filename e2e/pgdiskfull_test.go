package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
)

// TestPostgresDiskFull runs `baton serve` on a database whose files are on
// a tmpfs of 12 MiB (a tablespace of its own), fills it with sends through
// aws-sdk-go-v2, and makes room again:
//
//   - a send PostgreSQL refuses for the full disk (SQLSTATE 53100) is
//     answered 503 ServiceUnavailable within the retry bound, never 500;
//   - /healthz answers 503 naming the full disk while sends are refused,
//     though the database still answers its query, and 200 again after;
//   - the server logs the refusals once, not once per request;
//   - once there is room, sends are acknowledged again and every send
//     acknowledged before, during and after is received.
//
// It used to answer each refused send 500 InternalError, logged each one,
// and kept /healthz at 200.
func TestPostgresDiskFull(t *testing.T) {
	t.Parallel()
	pg := pgtest.MustStart(t)
	dir := mountTmpfs(t, "12m")
	ts := filepath.Join(dir, "ts")
	cred, err := postgresCredential()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ts, 0o700); err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		// The server, as postgres, reaches and owns the tablespace.
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chown(ts, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	for _, sql := range []string{
		"CREATE TABLESPACE full_disk LOCATION '" + ts + "'",
		"CREATE DATABASE full_disk TABLESPACE full_disk",
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	p := startBatonArgs(t, "--account-id", account, "--store", pg.URL("full_disk"))
	c := diskClient(p.URL)
	if _, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("pgfull")}); err != nil {
		t.Fatal(err)
	}
	queueURL := p.queueURL("pgfull")

	// Fill the disk: eight senders of 48 KiB bodies, until 503s have been
	// answered for a while or 2,000 sends are acknowledged.
	var (
		mu       sync.Mutex
		acked    []string
		refused  int
		fullSeen time.Time
		wrong    []string
		health   []health
	)
	var wg sync.WaitGroup
	stop := time.Now().Add(90 * time.Second)
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 2000 || (!fullSeen.IsZero() && time.Since(fullSeen) > 3*time.Second) || time.Now().After(stop)
	}
	for range 8 {
		wg.Go(func() {
			for !done() {
				body := noisyBody(48 << 10)
				asked := time.Now()
				_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &queueURL, MessageBody: aws.String(body)})
				took := time.Since(asked)
				status, code := errorStatus(err)
				mu.Lock()
				switch {
				case err == nil:
					acked = append(acked, body)
				case status == http.StatusServiceUnavailable && code == "ServiceUnavailable" && took < storeRetryBound+3*time.Second:
					refused++
					if fullSeen.IsZero() {
						fullSeen = time.Now()
					}
				default:
					if len(wrong) < 10 {
						wrong = append(wrong, err.Error())
					}
				}
				mu.Unlock()
				if err == nil {
					continue
				}
				h := healthz(p.URL)
				mu.Lock()
				health = append(health, h)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, w := range wrong {
		t.Errorf("send while the disk filled: %s; want success or 503 ServiceUnavailable within the bound", w)
	}
	if refused == 0 {
		t.Fatalf("%d sends acknowledged and none refused: the disk never filled", len(acked))
	}
	t.Logf("%d sends acknowledged, %d answered 503 once the disk was full", len(acked), refused)
	// A check right after a refused send sees it.
	if h := health[len(health)-1]; h.status != http.StatusServiceUnavailable || !strings.Contains(h.body, "database disk full") {
		t.Errorf("/healthz while sends are refused: %d %q; want 503 naming the full disk", h.status, h.body)
	}
	logs := p.logs.String()
	if n := strings.Count(logs, `problem="database disk full"`); n < 1 || n > 3 {
		t.Errorf("%d log lines of the full disk for %d refused sends; want it said once, then at most once every 10 s:\n%s", n, refused, logs)
	}
	if strings.Contains(logs, "internal error") {
		t.Errorf("the server logged an internal error:\n%s", logs)
	}

	// Room again: sends are acknowledged, and /healthz passes once no
	// send has been refused for a while.
	if out, err := run("mount", "-o", "remount,size=256m", dir); err != nil {
		t.Fatalf("grow the tmpfs: %v: %s", err, out)
	}
	testutil.CheckFor(t, 30*time.Second, func() error {
		body := noisyBody(1 << 10)
		_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &queueURL, MessageBody: aws.String(body)})
		if err == nil {
			acked = append(acked, body)
		}
		return err
	})
	testutil.CheckFor(t, 30*time.Second, func() error {
		if h := healthz(p.URL); h.status != http.StatusOK {
			return fmt.Errorf("/healthz %d %q %v", h.status, h.body, h.err)
		}
		return nil
	})
	checkAcked(t, acked, drainDisk(t, c, queueURL))
}
