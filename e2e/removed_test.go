package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/skipnote"
)

// TestDataDirRemovedWhileServing removes the data directory of the built
// server while it serves (an operator's `rm -rf`, a cleanup job), and
// checks through aws-sdk-go-v2 that the server does not go on
// acknowledging sends it writes to a file no restart will find: each call
// that would change something is answered 503 ServiceUnavailable, /healthz
// answers 503 naming the removed write-ahead log, the log says it, calls
// that only read are answered, the server stays up past its idle flush
// (which used to open a new write-ahead log in the removed directory and
// stop the process), and `baton export` still saves what it holds.
func TestDataDirRemovedWhileServing(t *testing.T) {
	skipnote.SkipUnlessLong(t, "the data directory removed under the server")
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	p := startBatonArgs(t, "--data-dir", data, "--account-id", account)
	c, url := diskQueue(t, p)
	ctx := context.Background()

	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("after")})
	wantUnavailable(t, "send once the data directory is removed", err)
	_, err = c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("other")})
	wantUnavailable(t, "CreateQueue once the data directory is removed", err)
	refusingAndUp(t, p, c, url, removed, "was removed", "the write-ahead log was removed or cut under the running server")
	// (The send answered 503 may be there too, as after any 503.)
	out, code := runBaton(t, "export", "--endpoint", p.URL)
	if code != 0 || !strings.Contains(out, `"before"`) {
		t.Errorf("baton export once the data directory is removed: exit %d, want the message sent before:\n%s", code, out)
	}
}

// TestLogTableRemovedWhileServing removes a table of the built server's
// log while it serves (an rm of a file of the data directory): Pebble
// keeps it open and goes on, but the next start cannot open the log, and
// `baton store salvage` cannot read it, so every acknowledged change is
// out of reach. Before, /healthz answered 200 and every send was
// acknowledged until that start. The server must, within a few seconds
// (it looks once a second), answer 503 ServiceUnavailable to changes,
// name the table in /healthz and its log, answer reads, stay up, and
// `baton export` must save what it holds; `baton serve --import` of that
// on a new data directory serves it again.
func TestLogTableRemovedWhileServing(t *testing.T) {
	skipnote.SkipUnlessLong(t, "a table of the log removed under the server")
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	p := startBatonArgs(t, "--data-dir", data, "--account-id", account)
	diskQueue(t, p)
	// Killed and started again, the server replays its write-ahead log
	// into a table.
	p.cmd.Process.Kill()
	<-p.exited
	p = startBatonArgs(t, "--data-dir", data, "--account-id", account)
	c, url := diskClient(p.URL), p.queueURL("q")
	tables, _ := filepath.Glob(filepath.Join(data, "pebble", "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table after the restart")
	}
	if h := healthz(p.URL); h.status != http.StatusOK {
		t.Fatalf("/healthz before the removal: %d %s", h.status, h.body)
	}
	if err := os.Remove(tables[0]); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	ctx := context.Background()
	acked := 0
	for ; ; acked++ {
		_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(fmt.Sprint("after-", acked))})
		if err != nil {
			wantUnavailable(t, "send once a table is removed", err)
			break
		}
		if time.Since(removed) > 30*time.Second {
			t.Fatalf("%d sends acknowledged in the 30 s after %s was removed, want a refusal", acked, tables[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d sends acknowledged in the %v before the refusal", acked, time.Since(removed).Round(time.Millisecond))
	refusingAndUp(t, p, c, url, removed, regexp.QuoteMeta(filepath.Base(tables[0]))+", was removed",
		"a file of the log was removed under the running server")
	export := filepath.Join(t.TempDir(), "export.json")
	if out, code := runBaton(t, "export", export, "--endpoint", p.URL); code != 0 {
		t.Fatalf("baton export once a table is removed: exit %d:\n%s", code, out)
	}
	if b, _ := os.ReadFile(export); !strings.Contains(string(b), `"before"`) {
		t.Errorf("the export lacks the message sent before:\n%s", b)
	}
	p2 := startBatonArgs(t, "--data-dir", filepath.Join(t.TempDir(), "new"), "--account-id", account, "--import", export)
	if got := drainDisk(t, diskClient(p2.URL), p2.queueURL("q")); !got["before"] {
		t.Errorf("the new data directory, imported, holds %v, want the message sent before", got)
	}
}

// TestLockFileRemovedWhileServing removes the data directory's lock file
// under the built server, then starts a second server on the directory:
// it takes a new lock file, meets the log's own lock, held by the first,
// and must exit 1 saying the directory is in use and its lock file was
// removed. Before, it said only "open the log: resource temporarily
// unavailable". The first serves on.
func TestLockFileRemovedWhileServing(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	p := startBatonArgs(t, "--data-dir", data, "--account-id", account)
	c, url := diskQueue(t, p)
	if err := os.Remove(filepath.Join(data, "lock")); err != nil {
		t.Fatal(err)
	}
	out, code := runBaton(t, "serve", "--listen", "127.0.0.1:0", "--data-dir", data)
	if code != 1 || strings.Contains(out, "baton serving") || !strings.Contains(out, "in use by another baton process") ||
		!strings.Contains(out, "lock file was removed") {
		t.Errorf("a second server on the directory: exit %d, output:\n%s\nwant exit 1 saying it is in use and its lock file was removed", code, out)
	}
	if _, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("after")}); err != nil {
		t.Errorf("send to the first server after the second was refused: %v", err)
	}
}

// TestLogWriteFailsEIO runs the built server on an ext4 image whose loop
// device's backing file, sparse, is on a small tmpfs, then fills the
// tmpfs: the device fails every write it must allocate for, and the
// kernel fails the fsync of the write-ahead log with EIO, as a failing
// disk does (or with ENOSPC, as the loop device passes on from some
// kernels). The server must not acknowledge the send whose sync failed,
// nor stop (Pebble panics or exits on the error): the send is answered 503
// within the write timeout and a margin, every call that would change
// something after it is refused at once, /healthz answers 503 naming the
// error, the log says it, reads are answered, and the server is still up,
// without a panic, after its idle flush. A send may still succeed after
// the fill when all it writes lands on pages of the image already backed
// (a recycled log file's, the page the last record ended in), so sends of
// 200 KB go on, at most 40 of them, until one is refused.
func TestLogWriteFailsEIO(t *testing.T) {
	skipnote.SkipUnlessLong(t, "an ext4 image whose device fails its writes")
	t.Parallel()
	outer := mountTmpfs(t, "48m")
	mnt := mountExt4In(t, outer, 256<<20)
	p := startBatonArgs(t, "--data-dir", filepath.Join(mnt, "data"), "--account-id", account)
	c, url := diskQueue(t, p)
	ctx := context.Background()

	fillDisk(t, outer)
	var failing time.Time
	var took time.Duration
	var err error
	sent := 0
	for ; sent < 40; sent++ {
		failing = time.Now()
		_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(noisyBody(200 << 10))})
		took = time.Since(failing)
		if err != nil {
			break
		}
	}
	wantUnavailable(t, "send whose fsync fails", err)
	t.Logf("send whose fsync fails (after %d sends acknowledged on the full disk) answered after %v: %v", sent, took.Round(time.Millisecond), err)
	if took > writeTimeout+10*time.Second {
		t.Errorf("send whose fsync fails answered after %v, want about the write timeout (%v)", took, writeTimeout)
	}
	start := time.Now()
	_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("after")})
	wantUnavailable(t, "send after the failed fsync", err)
	if took := time.Since(start); took > writeTimeout/2 {
		t.Errorf("send after the failed fsync answered after %v, want at once", took)
	}
	refusingAndUp(t, p, c, url, failing, "input/output error|no space left on device", "a write of the log failed")
}

// diskQueue creates queue q on p's server and sends it "before", and
// returns the client and the queue's URL.
func diskQueue(t *testing.T, p *batonProcess) (*sqs.Client, string) {
	t.Helper()
	c := diskClient(p.URL)
	ctx := context.Background()
	if _, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")}); err != nil {
		t.Fatal(err)
	}
	url := p.queueURL("q")
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("before")}); err != nil {
		t.Fatal(err)
	}
	return c, url
}

// refusingAndUp checks a server that refuses changes since the fault at
// since: reads are answered, /healthz answers 503 with health in its
// reason (a regular expression), the log holds logged, and the server is still up past two
// ticks of its idle flush (every 5 s), and /healthz still 503.
func refusingAndUp(t *testing.T, p *batonProcess, c *sqs.Client, url string, since time.Time, health, logged string) {
	t.Helper()
	if _, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &url}); err != nil {
		t.Errorf("GetQueueAttributes after the fault: %v", err)
	}
	h := healthz(p.URL)
	t.Logf("/healthz: %d %s", h.status, h.body)
	if h.status != http.StatusServiceUnavailable || !regexp.MustCompile(health).MatchString(h.body) {
		t.Errorf("/healthz after the fault: %d %q, want 503 naming %q", h.status, h.body, health)
	}
	if !strings.Contains(p.logs.String(), logged) {
		t.Errorf("no log line %q:\n%s", logged, tail(p.logs.String(), 10))
	}
	if rest := 12*time.Second - time.Since(since); rest > 0 {
		time.Sleep(rest)
	}
	select {
	case <-p.exited:
		t.Fatalf("the server stopped (%v):\n%s", p.waitErr, tail(p.logs.String(), 30))
	default:
	}
	if h := healthz(p.URL); h.status != http.StatusServiceUnavailable {
		t.Errorf("/healthz 12 s after the fault: %d %q, want 503", h.status, h.body)
	}
}

// TestDataDirImmutableWhileServing makes the built server's log directory
// immutable while it serves (`chattr +i`: as root, the way to have the
// kernel refuse the server's writes there with EPERM, as it refuses
// EACCES to a server whose directory's owner or mode was changed): the
// next write-ahead log cannot be created at the idle flush, which made
// Pebble panic and the process die. The server must instead refuse
// changes (503), answer /healthz 503 naming the refused create, log
// it, answer reads and stay up; and restarted once the attribute is
// removed, serve what it acknowledged before.
func TestDataDirImmutableWhileServing(t *testing.T) {
	skipnote.SkipUnlessLong(t, "the log directory made immutable under the server")
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	p := startBatonArgs(t, "--data-dir", data, "--account-id", account)
	c, url := diskQueue(t, p)
	logDir := filepath.Join(data, "pebble")
	if out, err := run("chattr", "+i", logDir); err != nil {
		needMount(t, "an immutable directory (chattr +i)", err, out)
	}
	t.Cleanup(func() { run("chattr", "-i", logDir) })
	since := time.Now()
	// The idle flush (5 s after the last commit, looked at every 5 s)
	// opens the next write-ahead log.
	testutil.CheckFor(t, 60*time.Second, func() error {
		if h := healthz(p.URL); h.status != http.StatusServiceUnavailable {
			return fmt.Errorf("/healthz %d %s", h.status, h.body)
		}
		return nil
	})
	_, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("after")})
	wantUnavailable(t, "send once the log directory is immutable", err)
	refusingAndUp(t, p, c, url, since, "operation not permitted", `problem="permission denied`)
	stopBaton(t, p)

	if out, err := run("chattr", "-i", logDir); err != nil {
		t.Fatalf("chattr -i: %v: %s", err, out)
	}
	p = startBatonArgs(t, "--data-dir", data, "--account-id", account)
	got := receiveAll(t, crashClient(p.URL), p.queueURL("q"))
	found := false
	for _, body := range got {
		found = found || body == "before"
	}
	if !found {
		t.Errorf("after a restart: %v, want the message sent before", got)
	}
}
