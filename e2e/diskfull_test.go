package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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

// The disk tests run `baton serve` on a small file system of its own: a
// tmpfs of a few MiB that fills up, or a loop-mounted ext4 image frozen
// with fsfreeze to stall every write. Mounting needs root (CI runs as
// root); where it is refused the tests are skipped, or failed when
// BATON_REQUIRE_MOUNT=1 or CI=true.

// writeTimeout is how long the embedded store lets a call wait for its
// commit (pebblestore.DefaultWriteTimeout; `baton serve` has no flag).
const writeTimeout = 5 * time.Second

// needMount skips or fails t because what (mounting, freezing, limiting a
// process) failed with out.
func needMount(t *testing.T, what string, err error, out []byte) {
	t.Helper()
	msg := fmt.Sprintf("cannot make %s (%v: %s)", what, err, strings.TrimSpace(string(out)))
	if os.Getenv("BATON_REQUIRE_MOUNT") == "1" || os.Getenv("CI") == "true" {
		t.Fatalf("%s and BATON_REQUIRE_MOUNT=1 or CI=true requires it", msg)
	}
	skipnote.Skip(t, "root and util-linux (mount, fsfreeze, prlimit)",
		"SKIPPED, NOT RUN: %s; run as root, or set BATON_REQUIRE_MOUNT=1 to fail instead", msg)
}

// run runs a command, with a bound on its time.
func run(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return exec.CommandContext(ctx, name, args...).CombinedOutput()
}

// mountTmpfs mounts a tmpfs of size (as mount's size= takes it) on a new
// directory and unmounts it when the test ends.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := run("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir); err != nil {
		needMount(t, "a tmpfs", err, out)
	}
	t.Cleanup(func() { unmount(t, dir) })
	return dir
}

// unmount unmounts dir, lazily if it is still busy.
func unmount(t *testing.T, dir string) {
	if out, err := run("umount", dir); err != nil {
		if out2, err2 := run("umount", "-l", dir); err2 != nil {
			t.Errorf("umount %s: %v: %s; umount -l: %v: %s", dir, err, out, err2, out2)
		}
	}
}

// resize gives the tmpfs at dir a new size: the disk's space coming back.
func resize(t *testing.T, dir, size string) {
	t.Helper()
	if out, err := run("mount", "-o", "remount,size="+size, dir); err != nil {
		t.Fatalf("remount %s with size %s: %v: %s", dir, size, err, out)
	}
}

// fillDisk writes a file in dir until the file system is full, and
// returns its name. Called again, it adds to the file what has been freed
// since.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	name := filepath.Join(dir, "filler")
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			break
		}
	}
	// The last, partial blocks.
	for _, n := range []int{64 << 10, 4 << 10, 512} {
		for {
			if _, err := f.Write(buf[:n]); err != nil {
				break
			}
		}
	}
	return name
}

// noisyBody is a body of about n bytes that does not compress.
func noisyBody(n int) string {
	b := make([]byte, n*3/4)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// diskClient is an SQS client that never retries and gives up after 30 s:
// a hang shows as a timeout, longer than any answer may take.
func diskClient(url string) *sqs.Client {
	return sqs.New(sqs.Options{
		BaseEndpoint:     aws.String(url),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDDISK", "secret", ""),
		RetryMaxAttempts: 1,
		// A transport of its own: the fault tests kill and restart
		// servers, and a port the system hands out again must not meet a
		// connection another test's server left in a shared pool.
		HTTPClient: sdkhttp.Client(&http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}}),
	})
}

// sendUntilRefused sends large bodies to queueURL until one is refused,
// and returns the bodies acknowledged. Each answer must come within the
// write timeout and a margin, and a refusal must be a 503.
func sendUntilRefused(t *testing.T, c *sqs.Client, queueURL string) (acked []string, took time.Duration) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for i := 0; time.Now().Before(deadline); i++ {
		body := noisyBody(150 << 10)
		start := time.Now()
		_, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &queueURL, MessageBody: &body})
		took := time.Since(start)
		if took > writeTimeout+10*time.Second {
			t.Fatalf("send %d answered after %v: more than the write timeout (%v) allows (err %v)", i, took, writeTimeout, err)
		}
		if err == nil {
			acked = append(acked, body)
			continue
		}
		if status, code := errorStatus(err); status != http.StatusServiceUnavailable || code != "ServiceUnavailable" {
			t.Fatalf("send %d on a full disk: %v (HTTP %d %s), want 503 ServiceUnavailable", i, err, status, code)
		}
		return acked, took
	}
	t.Fatalf("no send refused in 2 minutes")
	return nil, 0
}

// wantUnavailable checks that err is a 503 ServiceUnavailable.
func wantUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	if status, code := errorStatus(err); err == nil || status != http.StatusServiceUnavailable || code != "ServiceUnavailable" {
		t.Errorf("%s: %v (HTTP %d %q), want 503 ServiceUnavailable", what, err, status, code)
	}
}

// metric returns the value of an unlabelled metric on base's /metrics.
func metric(t *testing.T, base, name string) float64 {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(base + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no %s in /metrics", name)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatalf("%s = %q", name, m[1])
	}
	return v
}

// logLines counts the lines the server has logged.
func (p *batonProcess) logLines() int { return strings.Count(p.logs.String(), "\n") }

// drainDisk receives every message of queueURL, deleting them, and
// returns their bodies.
func drainDisk(t *testing.T, c *sqs.Client, queueURL string) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	empty, lost := 0, 0
	for empty < 2 {
		// A lease of a second: a receive whose answer is lost on the way
		// (the outcome unknown) leaves its messages hidden only that long.
		out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &queueURL, MaxNumberOfMessages: 10,
			WaitTimeSeconds: 3, VisibilityTimeout: 1})
		if status, _ := errorStatus(err); err != nil && status == http.StatusOK && lost < 20 {
			lost++
			t.Logf("receive: the answer was lost on the way (%v); again", err)
			continue
		}
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		entries := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
		for i, m := range out.Messages {
			got[*m.Body] = true
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		if _, err := c.DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: &queueURL, Entries: entries}); err != nil {
			t.Fatalf("delete: %v", err)
		}
	}
	return got
}

// checkAcked fails t for each acknowledged body missing from got.
func checkAcked(t *testing.T, acked []string, got map[string]bool) {
	t.Helper()
	lost := 0
	for _, b := range acked {
		if !got[b] {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged sends lost", lost, len(acked))
	}
	t.Logf("%d acknowledged sends, 0 lost; %d received in all", len(acked), len(got))
}

// TestDiskFull fills the embedded store's disk (a 64 MiB tmpfs) with sends
// while it serves, then fills what is left with a file, so that Pebble's
// flush of the last sends fails and is retried, and checks what a client
// sees through aws-sdk-go-v2:
//
//   - the send that cannot be made durable is answered 503
//     ServiceUnavailable within the write timeout and a margin, and so is
//     every call that would change something (a receive too); calls that
//     change nothing (GetQueueAttributes, ListQueues, GetQueueUrl) are
//     answered;
//   - /healthz answers 503 naming the full disk, /metrics counts the
//     failed background writes and the refused calls;
//   - the log says it once, not once per retry of Pebble's flush;
//   - once the disk has room again service resumes by itself;
//   - then, filled again, the server stops on SIGTERM within its deadline,
//     and restarted with room it has every acknowledged send.
func TestDiskFull(t *testing.T) {
	skipnote.SkipUnlessLong(t, "a tmpfs filled under the server")
	t.Parallel()
	mnt := mountTmpfs(t, "64m")
	data := filepath.Join(mnt, "data")
	p := startBatonArgs(t, "--data-dir", data, "--account-id", account)
	c := diskClient(p.URL)
	ctx := context.Background()
	for _, name := range []string{"full", "other"} {
		if _, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
	}
	url := p.queueURL("full")
	// A message leased before the disk fills, to delete and change later.
	otherURL := p.queueURL("other")
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &otherURL, MessageBody: aws.String("leased")}); err != nil {
		t.Fatal(err)
	}
	leased, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &otherURL, VisibilityTimeout: 600})
	if err != nil || len(leased.Messages) != 1 {
		t.Fatalf("receive: %v, %v", leased, err)
	}
	handle := leased.Messages[0].ReceiptHandle

	acked, took := sendUntilRefused(t, c, url)
	t.Logf("disk full after %d sends of 150 KiB; the refused send was answered 503 after %v", len(acked), took.Round(time.Millisecond))
	// Nothing left: the flush of the last sends, when the server is idle,
	// fails, and Pebble tries it again and again. (A flush under way when
	// the disk filled may end after, and free the write-ahead log it
	// replaces: the space it frees is filled too.)
	filler := fillDisk(t, mnt)
	testutil.CheckFor(t, time.Minute, func() error {
		if v := metric(t, p.URL, "baton_store_background_write_failures_total"); v < 1 {
			fillDisk(t, mnt)
			return fmt.Errorf("baton_store_background_write_failures_total = %v, want > 0", v)
		}
		return nil
	})

	// Calls that would change something are refused at once now.
	start := time.Now()
	_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("refused")})
	wantUnavailable(t, "send while the disk is full", err)
	t.Logf("next send answered 503 after %v", time.Since(start).Round(time.Millisecond))
	_, err = c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 1})
	wantUnavailable(t, "receive while the disk is full", err)
	// Calls that change nothing are answered.
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		t.Errorf("GetQueueAttributes while the disk is full: %v", err)
	} else if n, _ := strconv.Atoi(attrs.Attributes["ApproximateNumberOfMessages"]); n < len(acked) {
		t.Errorf("ApproximateNumberOfMessages = %d, want at least the %d acknowledged", n, len(acked))
	}
	if out, err := c.ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil || len(out.QueueUrls) != 2 {
		t.Errorf("ListQueues while the disk is full: %v, %v", out, err)
	}
	if _, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("other")}); err != nil {
		t.Errorf("GetQueueUrl while the disk is full: %v", err)
	}
	// Every other kind of change is refused the same way, before it is
	// made: checked once the disk has room again.
	_, err = c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &url,
		Entries: []types.SendMessageBatchRequestEntry{{Id: aws.String("a"), MessageBody: aws.String("refused")}}})
	wantUnavailable(t, "SendMessageBatch while the disk is full", err)
	_, err = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &otherURL, ReceiptHandle: handle})
	wantUnavailable(t, "DeleteMessage while the disk is full", err)
	_, err = c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &otherURL, ReceiptHandle: handle, VisibilityTimeout: 0})
	wantUnavailable(t, "ChangeMessageVisibility while the disk is full", err)
	_, err = c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("third")})
	wantUnavailable(t, "CreateQueue while the disk is full", err)
	_, err = c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &otherURL, Attributes: map[string]string{"DelaySeconds": "5"}})
	wantUnavailable(t, "SetQueueAttributes while the disk is full", err)
	_, err = c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: &otherURL})
	wantUnavailable(t, "DeleteQueue while the disk is full", err)
	h := healthz(p.URL)
	t.Logf("/healthz: %d %s", h.status, h.body)
	if h.status != http.StatusServiceUnavailable || !strings.Contains(h.body, "disk full") {
		t.Errorf("/healthz while the disk is full: %d %q, want 503 naming the full disk", h.status, h.body)
	}
	if v := metric(t, p.URL, "baton_store_unavailable_total"); v < 2 {
		t.Errorf("baton_store_unavailable_total = %v, want at least the 2 refused calls", v)
	}
	if v := metric(t, p.URL, "baton_store_ready"); v != 0 {
		t.Errorf("baton_store_ready = %v, want 0", v)
	}

	// Pebble retries the flush meanwhile; the log stays quiet.
	const window = 10 * time.Second
	before := p.logLines()
	time.Sleep(window)
	lines := p.logLines() - before
	t.Logf("%d log lines in %v on a full disk", lines, window)
	if lines > 5 {
		t.Errorf("%d log lines in %v while nothing was asked of the server, want a few at most:\n%s", lines, window, tail(p.logs.String(), 20))
	}

	// Room again: service resumes without a restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	resize(t, mnt, "256m")
	back := time.Now()
	testutil.CheckFor(t, time.Minute, func() error {
		body := noisyBody(1 << 10)
		_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body})
		if status, _ := errorStatus(err); err != nil && status != http.StatusServiceUnavailable {
			t.Fatalf("send once the disk has room: %v", err)
		}
		if err == nil {
			acked = append(acked, body)
		}
		return err
	})
	t.Logf("sends acknowledged again %v after the disk had room", time.Since(back).Round(time.Millisecond))
	// None of the refused changes was made: the leased message is still
	// leased (its handle takes a visibility change), the queue created
	// and the one deleted are as before, and the attribute is unchanged.
	if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &otherURL, ReceiptHandle: handle, VisibilityTimeout: 0}); err != nil {
		t.Errorf("ChangeMessageVisibility once the disk has room: %v", err)
	}
	if out, err := c.ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil || len(out.QueueUrls) != 2 {
		t.Errorf("ListQueues once the disk has room: %v, %v, want the 2 queues", out, err)
	}
	if out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &otherURL,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameDelaySeconds}}); err != nil || out.Attributes["DelaySeconds"] != "0" {
		t.Errorf("DelaySeconds once the disk has room: %v, %v, want 0", out, err)
	}
	if got := drainDisk(t, c, otherURL); !got["leased"] {
		t.Errorf("the leased message, whose delete was refused, is gone: %v", got)
	}
	testutil.CheckFor(t, 30*time.Second, func() error {
		if h := healthz(p.URL); h.status != http.StatusOK {
			return fmt.Errorf("/healthz: %d %s", h.status, h.body)
		}
		return nil
	})
	if !regexp.MustCompile(`background writes work again|the disk takes writes again`).MatchString(p.logs.String()) {
		t.Errorf("no line saying the disk takes writes again:\n%s", tail(p.logs.String(), 20))
	}

	// Full again, then SIGTERM: the server stops within its deadline.
	more, _ := sendUntilRefused(t, c, url)
	acked = append(acked, more...)
	filler = fillDisk(t, mnt)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	termed := time.Now()
	select {
	case <-p.exited:
		t.Logf("stopped %v after SIGTERM on a full disk (%v)", time.Since(termed).Round(time.Millisecond), p.waitErr)
	case <-time.After(45 * time.Second):
		t.Fatalf("still running 45 s after SIGTERM on a full disk:\n%s", tail(p.logs.String(), 20))
	}

	// Restarted with room: every acknowledged send is there.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	p = startBatonArgs(t, "--data-dir", data, "--account-id", account)
	c = diskClient(p.URL)
	checkAcked(t, acked, drainDisk(t, c, p.queueURL("full")))
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestStartOnFullDisk restarts the server, after a kill -9 left sends in
// its write-ahead log, on a disk with no room left: replaying the log must
// write a table. It must exit non-zero with a message that says what is
// wrong and what to do, not hang; and start, with every acknowledged send,
// once there is room.
func TestStartOnFullDisk(t *testing.T) {
	skipnote.SkipUnlessLong(t, "the server started on a full tmpfs")
	t.Parallel()
	mnt := mountTmpfs(t, "64m")
	data := filepath.Join(mnt, "data")
	p := startBatonArgs(t, "--data-dir", data, "--account-id", account)
	c := diskClient(p.URL)
	ctx := context.Background()
	if _, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")}); err != nil {
		t.Fatal(err)
	}
	var acked []string
	for range 10 {
		body := noisyBody(100 << 10)
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(p.queueURL("q")), MessageBody: &body}); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, body)
	}
	p.cmd.Process.Kill()
	<-p.exited
	filler := fillDisk(t, mnt)

	cmd := exec.Command(batonBin, "serve", "--listen", "127.0.0.1:0", "--data-dir", data)
	cmd.Env = serverEnv()
	out := &serverLog{addr: make(chan string, 1)}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	started := time.Now()
	select {
	case err := <-exited:
		t.Logf("exited after %v: %v; output:\n%s", time.Since(started).Round(time.Millisecond), err, out)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Errorf("exit: %v, want a non-zero status", err)
		}
		if s := out.String(); !strings.Contains(s, "disk full") || !strings.Contains(s, "free space") {
			t.Errorf("the output does not name the full disk and what to do:\n%s", s)
		}
	case addr := <-out.addr:
		t.Errorf("serving at %s on a full disk: want an exit", addr)
	case <-time.After(45 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("neither serving nor exited 45 s after starting on a full disk; output:\n%s", tail(out.String(), 20))
	}
	if lines := strings.Count(out.String(), "\n"); lines > 10 {
		t.Errorf("%d lines of output for one failed start, want a few", lines)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	p = startBatonArgs(t, "--data-dir", data, "--account-id", account)
	checkAcked(t, acked, drainDisk(t, diskClient(p.URL), p.queueURL("q")))
}

// serverEnv is this process's environment without BATON_ settings, as
// startBatonArgs gives the server.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BATON_") {
			env = append(env, kv)
		}
	}
	return env
}

// mountExt4 makes an ext4 image of size bytes, loop-mounts it on a new
// directory and unmounts it when the test ends.
func mountExt4(t *testing.T, size int64) string {
	t.Helper()
	return mountExt4In(t, t.TempDir(), size)
}

// mountExt4In is mountExt4 with the image, a sparse file, in dir.
func mountExt4In(t *testing.T, dir string, size int64) string {
	t.Helper()
	img := filepath.Join(dir, "disk.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out, err := run("mkfs.ext4", "-q", "-F", img); err != nil {
		needMount(t, "an ext4 image (mkfs.ext4)", err, out)
	}
	mnt := t.TempDir()
	if out, err := run("mount", "-o", "loop", img, mnt); err != nil {
		needMount(t, "a loop-mounted ext4 image", err, out)
	}
	t.Cleanup(func() { unmount(t, mnt) })
	return mnt
}

// freeze stalls every write to the file system at dir (fsfreeze) until
// the returned function, also run when the test ends, thaws it.
func freeze(t *testing.T, dir string) (thaw func()) {
	t.Helper()
	if out, err := run("fsfreeze", "--freeze", dir); err != nil {
		needMount(t, "a frozen file system (fsfreeze)", err, out)
	}
	frozen := true
	thaw = func() {
		if frozen {
			frozen = false
			if out, err := run("fsfreeze", "--unfreeze", dir); err != nil {
				t.Errorf("fsfreeze --unfreeze %s: %v: %s", dir, err, out)
			}
		}
	}
	t.Cleanup(thaw)
	return thaw
}

// TestDiskStall stalls the embedded store's disk (an ext4 image frozen with
// fsfreeze: every write and fsync waits) for about 15 s while it serves, and
// checks that it leaves a trace: the send waiting for its commit is
// answered 503 after the write timeout, the stalled operation is logged
// while it lasts and when it ends, /healthz answers 503 naming the slow
// disk meanwhile, /metrics counts it, reads are answered throughout, and
// service resumes once the disk does.
func TestDiskStall(t *testing.T) {
	skipnote.SkipUnlessLong(t, "an ext4 image frozen under the server")
	t.Parallel()
	mnt := mountExt4(t, 128<<20)
	p := startBatonArgs(t, "--data-dir", filepath.Join(mnt, "data"), "--account-id", account)
	c, url := diskQueue(t, p)
	ctx := context.Background()

	thaw := freeze(t, mnt)
	stalled := time.Now()
	start := time.Now()
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("during")})
	took := time.Since(start)
	wantUnavailable(t, "send while the disk stalls", err)
	t.Logf("send during the stall answered after %v: %v", took.Round(time.Millisecond), err)
	if took > writeTimeout+10*time.Second {
		t.Errorf("send during the stall answered after %v, want about the write timeout (%v)", took, writeTimeout)
	}
	if _, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url}); err != nil {
		t.Errorf("GetQueueAttributes while the disk stalls: %v", err)
	}
	testutil.CheckFor(t, 30*time.Second, func() error {
		if !strings.Contains(p.logs.String(), "a disk operation is slow") {
			return errors.New("no log line of the slow disk operation")
		}
		return nil
	})
	t.Logf("slow operation logged %v into the stall", time.Since(stalled).Round(time.Millisecond))
	h := healthz(p.URL)
	t.Logf("/healthz during the stall: %d %s", h.status, h.body)
	if h.status != http.StatusServiceUnavailable || !strings.Contains(h.body, "disk slow") {
		t.Errorf("/healthz during the stall: %d %q, want 503 naming the slow disk", h.status, h.body)
	}
	if v := metric(t, p.URL, "baton_store_slow_disk_operations_total"); v < 1 {
		t.Errorf("baton_store_slow_disk_operations_total = %v, want > 0", v)
	}
	if rest := 15*time.Second - time.Since(stalled); rest > 0 {
		time.Sleep(rest)
	}
	thaw()
	t.Logf("disk thawed after %v", time.Since(stalled).Round(time.Millisecond))

	testutil.CheckFor(t, 30*time.Second, func() error {
		if h := healthz(p.URL); h.status != http.StatusOK {
			return fmt.Errorf("/healthz: %d %s", h.status, h.body)
		}
		return nil
	})
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("after")}); err != nil {
		t.Errorf("send after the stall: %v", err)
	}
	if m := regexp.MustCompile(`a slow disk operation ended.*took=(\S+)`).FindStringSubmatch(p.logs.String()); m == nil {
		t.Errorf("no log line of the slow operation's end:\n%s", tail(p.logs.String(), 20))
	} else {
		t.Logf("the slow operation took %s", m[1])
	}
	got := drainDisk(t, c, url)
	checkAcked(t, []string{"before", "after"}, got)
}

// TestFewFileDescriptors takes every file descriptor from the server
// (prlimit lowers its soft limit to 3, below every descriptor it holds)
// while sends fill Pebble's memtables, so that the next write-ahead log
// file cannot be opened (Pebble would stop the process on that error), and
// checks that the commit waits instead: the send is answered 503, and
// later ones 503 at once; /healthz, asked over a connection opened before,
// names the problem; connections opened meanwhile cannot be accepted, and
// the log says so a few lines a second at most; the server stays up; once
// the limit is back, the log goes on and every acknowledged send is there.
func TestFewFileDescriptors(t *testing.T) {
	skipnote.SkipUnlessLong(t, "the server out of file descriptors")
	t.Parallel()
	p := startBatonArgs(t, "--account-id", account)
	// Connections opened before the limit and kept: one for the SDK, one
	// for /healthz. One at most each: a transport may dial a new one for
	// a request before the last has gone back to its pool, and the server
	// cannot accept it.
	keep := func() *http.Client {
		return &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxConnsPerHost: 1, IdleConnTimeout: 0}}
	}
	c := sqs.New(sqs.Options{
		BaseEndpoint:     aws.String(p.URL),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDDISK", "secret", ""),
		RetryMaxAttempts: 1,
		HTTPClient:       sdkhttp.Client(keep()),
	})
	checks := keep()
	ctx := context.Background()
	if _, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")}); err != nil {
		t.Fatal(err)
	}
	url := p.queueURL("q")
	var acked []string
	send := func() error {
		body := noisyBody(150 << 10)
		_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body})
		if err == nil {
			acked = append(acked, body)
		}
		return err
	}
	if err := send(); err != nil {
		t.Fatal(err)
	}
	if h := healthOver(checks, p.URL); h.status != http.StatusOK {
		t.Fatalf("/healthz before the limit: %d %s %v", h.status, h.body, h.err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(p.cmd.Process.Pid)
	if out, err := run("prlimit", "--pid", pid, "--nofile=3:"); err != nil {
		needMount(t, "a limit of the server's file descriptors (prlimit)", err, out)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if out, err := run("prlimit", "--pid", pid, fmt.Sprintf("--nofile=%d:", lim.Cur)); err != nil {
				t.Errorf("prlimit back to %d: %v\n%s", lim.Cur, err, out)
			}
		}
	}
	defer restore()
	// Sends until one waits for the log file and is answered 503.
	before := p.logLines()
	start := time.Now()
	for n := 0; ; n++ {
		err := send()
		if err == nil {
			if n == 100 {
				t.Fatal("100 sends of 150 KiB taken with no file descriptor to spare")
			}
			continue
		}
		if status, _ := errorStatus(err); status != http.StatusServiceUnavailable {
			t.Fatalf("send with no file descriptor to spare: %v", err)
		}
		break
	}
	h := healthOver(checks, p.URL)
	t.Logf("/healthz: %d %s", h.status, h.body)
	if h.status != http.StatusServiceUnavailable || !strings.Contains(h.body, "out of file descriptors") {
		t.Errorf("/healthz with no file descriptor to spare: %d %q (%v), want 503 naming them", h.status, h.body, h.err)
	}
	// More sends are refused at once. A client may lose its connection
	// meanwhile (the server closes the old log file, and whatever takes
	// the free descriptor first, an accept or the log, has it), and no new
	// one can be accepted: that send goes unanswered, and the test stops
	// sending.
	refused, lost := 0, error(nil)
	for range 20 {
		body := noisyBody(1 << 10)
		_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body})
		status, _ := errorStatus(err)
		if err == nil {
			acked = append(acked, body)
		} else if status == http.StatusServiceUnavailable {
			refused++
		} else if status == 0 {
			lost = err
			break
		} else {
			t.Fatalf("send with no file descriptor to spare: %v", err)
		}
	}
	t.Logf("then %d sends refused; a connection lost: %v", refused, lost)
	// New connections wait in the listener's backlog.
	addr := strings.TrimPrefix(p.URL, "http://")
	for range 20 {
		if conn, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
			defer conn.Close()
		}
	}
	testutil.CheckFor(t, time.Minute, func() error {
		if !strings.Contains(p.logs.String(), "too many open files") {
			return errors.New("nothing has failed for want of a file descriptor yet")
		}
		return nil
	})
	time.Sleep(5 * time.Second)
	lines, spent := p.logLines()-before, time.Since(start)
	rate := float64(lines) / spent.Seconds()
	t.Logf("%d log lines in %v with no file descriptor to spare: %.1f a second; the last:\n%s", lines, spent.Round(time.Millisecond), rate, tail(p.logs.String(), 6))
	if rate > 5 {
		t.Errorf("%.1f log lines a second, want a few at most:\n%s", rate, tail(p.logs.String(), 20))
	}
	select {
	case <-p.exited:
		t.Fatalf("the server stopped (%v):\n%s", p.waitErr, tail(p.logs.String(), 20))
	default:
	}

	restore()
	testutil.CheckFor(t, time.Minute, func() error {
		if h := healthz(p.URL); h.status != http.StatusOK {
			return fmt.Errorf("/healthz: %d %s", h.status, h.body)
		}
		return send()
	})
	checkAcked(t, acked, drainDisk(t, c, url))
}
