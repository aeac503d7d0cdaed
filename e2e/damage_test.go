package e2e_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/baton-sqs/baton/internal/testutil"
)

// runBaton runs the binary with args to its end (at most a minute) and
// returns its output and exit code.
func runBaton(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, batonBin, args...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "BATON_") })
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatalf("baton %v: %v\n%s", args, err, out)
	}
	return string(out), 0
}

// damageFixture serves dir, creates a queue and sends n messages (their
// bodies long enough to fill several table blocks), waits until the idle
// server has flushed them to a table, and stops the server cleanly. It
// returns the bodies sent, by message id.
func damageFixture(t *testing.T, dir string, n int) map[string]string {
	t.Helper()
	p := startBatonArgs(t, "--data-dir", dir, "--account-id", account)
	c := crashClient(p.URL)
	ctx := t.Context()
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("damage")})
	if err != nil {
		t.Fatal(err)
	}
	sent := make(map[string]string)
	for i := range n {
		body := fmt.Sprintf("message %d %s", i, strings.Repeat("x", 1500))
		out, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(body)})
		if err != nil {
			t.Fatal(err)
		}
		sent[*out.MessageId] = body
	}
	// The server flushes its memtable to a table once idle for a while.
	testutil.CheckFor(t, 60*time.Second, func() error {
		if names, _ := filepath.Glob(filepath.Join(dir, "pebble", "*.sst")); len(names) == 0 {
			return errors.New("no table yet")
		}
		return nil
	})
	stopBaton(t, p)
	return sent
}

// flipByte flips one byte of the only table, at frac of its length.
func flipTable(t *testing.T, dir string, frac float64) string {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "pebble", "*.sst"))
	if len(names) != 1 {
		t.Fatalf("tables %v, want one", names)
	}
	b, err := os.ReadFile(names[0])
	if err != nil {
		t.Fatal(err)
	}
	b[int(float64(len(b))*frac)] ^= 0x5a
	if err := os.WriteFile(names[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	return names[0]
}

// A newest write-ahead log cut short after a clean stop: the server
// refuses to start, saying which file and why, and `baton store check`
// exits 1 naming the damage.
func TestDamagedWALRefusesToServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startBatonArgs(t, "--data-dir", dir, "--account-id", account)
	c := crashClient(p.URL)
	q, err := c.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String("wal")})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := c.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	stopBaton(t, p)
	wals, _ := filepath.Glob(filepath.Join(dir, "pebble", "*.log"))
	if len(wals) == 0 {
		t.Fatal("no write-ahead log")
	}
	wal := wals[len(wals)-1]
	fi, err := os.Stat(wal)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(wal, fi.Size()/2); err != nil {
		t.Fatal(err)
	}

	out, code := runBaton(t, "serve", "--listen", "127.0.0.1:0", "--data-dir", dir)
	if code == 0 || strings.Contains(out, "baton serving") || !strings.Contains(out, "the data directory is damaged") ||
		!strings.Contains(out, "log.mark") || !strings.Contains(out, wal) {
		t.Errorf("serve on a truncated log: exit %d, output:\n%s\nwant a refusal naming %s and log.mark", code, out, wal)
	}
	out, code = runBaton(t, "store", "check", "--data-dir", dir)
	if code != 1 || !strings.Contains(out, "damaged:") {
		t.Errorf("store check: exit %d, output:\n%s\nwant exit 1 and the damage", code, out)
	}
}

// A byte flipped early in the MANIFEST, which would drop the tables it
// lists after the damage (and Pebble delete them): the server refuses to
// start, naming the MANIFEST, deletes no table, and a check exits 1;
// with the byte restored, the server serves every message.
func TestDamagedManifestRefusesToServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sent := damageFixture(t, dir, 30)
	manifests, _ := filepath.Glob(filepath.Join(dir, "pebble", "MANIFEST-*"))
	if len(manifests) == 0 {
		t.Fatal("no MANIFEST")
	}
	manifest := manifests[len(manifests)-1]
	orig, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	damaged := slices.Clone(orig)
	damaged[20] ^= 0x5a
	if err := os.WriteFile(manifest, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	tables, _ := filepath.Glob(filepath.Join(dir, "pebble", "*.sst"))

	for range 2 { // the refusal leaves the directory as it was: it refuses again
		out, code := runBaton(t, "serve", "--listen", "127.0.0.1:0", "--data-dir", dir)
		if code == 0 || strings.Contains(out, "baton serving") || !strings.Contains(out, manifest+" has a damaged record") {
			t.Fatalf("serve on a damaged MANIFEST: exit %d, output:\n%s\nwant a refusal naming %s", code, out, manifest)
		}
	}
	if after, _ := filepath.Glob(filepath.Join(dir, "pebble", "*.sst")); !slices.Equal(after, tables) {
		t.Errorf("tables %v after the refused starts, want %v", after, tables)
	}
	if out, code := runBaton(t, "store", "check", "--data-dir", dir); code != 1 || !strings.Contains(out, "MANIFEST") {
		t.Errorf("store check: exit %d, output:\n%s\nwant exit 1 naming the MANIFEST", code, out)
	}

	if err := os.WriteFile(manifest, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBatonArgs(t, "--data-dir", dir, "--account-id", account)
	if got := receiveAll(t, crashClient(p.URL), p.queueURL("damage")); len(got) != len(sent) {
		t.Errorf("with the MANIFEST restored: %d messages, want %d", len(got), len(sent))
	}
}

// Salvage into a directory whose disk fills (a tmpfs with room for the
// new log's write-ahead log, not for the table its flush writes): it ends,
// exit status 1, naming the full disk. Before, it never ended: Pebble
// tried the flush again at once and for ever, logging each failure (29,749
// lines in the minute runBaton gives it, a table written each time).
func TestSalvageOntoFullDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startBatonArgs(t, "--data-dir", dir, "--account-id", account)
	c := crashClient(p.URL)
	q, err := c.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String("full")})
	if err != nil {
		t.Fatal(err)
	}
	for range 40 { // 2 MiB that does not compress much
		if _, err := c.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(noisyBody(50 << 10))}); err != nil {
			t.Fatal(err)
		}
	}
	stopBaton(t, p)

	mnt := mountTmpfs(t, "16m")
	filler := fillDisk(t, mnt)
	st, err := os.Stat(filler)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filler, st.Size()-5<<19); err != nil { // 2.5 MiB free
		t.Fatal(err)
	}
	start := time.Now()
	out, code := runBaton(t, "store", "salvage", "--data-dir", dir, "--to", filepath.Join(mnt, "salvaged"))
	took := time.Since(start)
	t.Logf("salvage onto a full disk: exit %d after %v: %s", code, took.Round(time.Millisecond), tail(out, 1))
	if code != 1 || !strings.Contains(out, "no space left on device") {
		t.Errorf("salvage onto a full disk: exit %d after %v, output (%d lines, the last 5):\n%s\nwant exit 1 naming the full disk",
			code, took.Round(time.Millisecond), strings.Count(out, "\n"), tail(out, 5))
	}
}

// A damaged table found before serving: serve refuses, check names the
// table and the messages, and salvage copies every other message into a
// new directory, which serves them through an SDK; the messages salvage
// lists as lost are exactly those missing.
func TestDamagedTableSalvaged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sent := damageFixture(t, dir, 60)
	table := flipTable(t, dir, 0.02) // the first block: message records

	out, code := runBaton(t, "serve", "--listen", "127.0.0.1:0", "--data-dir", dir)
	if code == 0 || strings.Contains(out, "baton serving") || !strings.Contains(out, filepath.Base(table)) {
		t.Errorf("serve on a damaged table: exit %d, output:\n%s\nwant a refusal naming %s", code, out, table)
	}
	out, code = runBaton(t, "store", "check", "--data-dir", dir)
	if code != 1 || !strings.Contains(out, table+" is damaged") {
		t.Fatalf("store check: exit %d, output:\n%s\nwant exit 1 naming %s", code, out, table)
	}
	to := filepath.Join(t.TempDir(), "salvaged")
	out, code = runBaton(t, "store", "salvage", "--data-dir", dir, "--to", to)
	if code != 0 {
		t.Fatalf("store salvage: exit %d, output:\n%s", code, out)
	}
	t.Logf("salvage:\n%s", out)
	// A message whose record is lost is listed by its place, its id
	// with the record.
	lost := map[string]bool{}
	for _, m := range regexp.MustCompile(`lost: queue \S+, message ([0-9a-f-]{36}) `).FindAllStringSubmatch(out, -1) {
		lost[m[1]] = true
	}
	unknown := strings.Count(out, "(id unknown)")
	if len(lost)+unknown == 0 {
		t.Errorf("salvage lists no lost message")
	}

	p := startBatonArgs(t, "--data-dir", to, "--account-id", account)
	got := receiveAll(t, crashClient(p.URL), p.queueURL("damage"))
	for id, body := range sent {
		switch g, ok := got[id]; {
		case ok && lost[id]:
			t.Errorf("message %s received and listed lost", id)
		case ok && g != body:
			t.Errorf("message %s: body %.30q, want %.30q", id, g, body)
		}
	}
	if len(got)+len(lost)+unknown != len(sent) {
		t.Errorf("%d sent, but %d received from the salvaged store, %d listed lost by id and %d by place",
			len(sent), len(got), len(lost), unknown)
	}
	t.Logf("%d sent, %d received from the salvaged store, %d listed lost by id, %d by place", len(sent), len(got), len(lost), unknown)
}

// A damaged body: the start, reading every body of a small log, logs the
// damaged table and serves; a receive that meets the body answers 503
// ServiceUnavailable, the log names the message, and the server keeps
// serving. Salvage then lists the lost messages by id, and the salvaged
// store serves every other one.
func TestDamagedBodyAnswers503(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sent := damageFixture(t, dir, 60)
	flipTable(t, dir, 0.6) // a block of bodies
	// Its /healthz may answer 503, naming the damage, once a compaction
	// meets the damaged block; it must never blame a full disk.
	p := startBatonServing(t, 15*time.Second, "--data-dir", dir, "--account-id", account)
	defer func() {
		resp, err := http.Get(p.URL + "/healthz")
		if err != nil {
			t.Errorf("GET /healthz: %v", err)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK && !strings.Contains(string(body), "log damaged") {
			t.Errorf("GET /healthz: %d %q; want 200, or 503 naming the damaged log", resp.StatusCode, body)
		}
	}()
	if !strings.Contains(p.logs.String(), "the log holds message bodies it cannot read") {
		t.Errorf("the start did not report the damaged table:\n%s", p.logs)
	}
	c := crashClient(p.URL)
	url := p.queueURL("damage")
	unavailable := false
	for range 60 {
		_, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 1})
		var api smithy.APIError
		if errors.As(err, &api) {
			if api.ErrorCode() != "ServiceUnavailable" {
				t.Fatalf("receive: %v, want ServiceUnavailable", err)
			}
			unavailable = true
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !unavailable {
		t.Fatal("no receive met the damaged block")
	}
	if !strings.Contains(p.logs.String(), "cannot read a message's body") {
		t.Errorf("no log line names the message:\n%s", p.logs)
	}
	if _, err := c.ListQueues(t.Context(), &sqs.ListQueuesInput{}); err != nil {
		t.Errorf("the server stopped serving: %v", err)
	}
	stopBaton(t, p)

	to := filepath.Join(t.TempDir(), "salvaged")
	out, code := runBaton(t, "store", "salvage", "--data-dir", dir, "--to", to)
	if code != 0 {
		t.Fatalf("store salvage: exit %d, output:\n%s", code, out)
	}
	lost := map[string]bool{}
	for _, m := range regexp.MustCompile(`lost: queue \S+/damage, message ([0-9a-f-]{36}) \(pos \d+\): its body is lost`).FindAllStringSubmatch(out, -1) {
		lost[m[1]] = true
	}
	if len(lost) == 0 || strings.Contains(out, "(id unknown)") {
		t.Errorf("salvage did not list the lost messages by id:\n%s", out)
	}
	p = startBatonArgs(t, "--data-dir", to, "--account-id", account)
	got := receiveAll(t, crashClient(p.URL), p.queueURL("damage"))
	for id, body := range sent {
		switch g, ok := got[id]; {
		case ok == lost[id]:
			t.Errorf("message %s: received %t, listed lost %t", id, ok, lost[id])
		case ok && g != body:
			t.Errorf("message %s: body %.30q, want %.30q", id, g, body)
		}
	}
	t.Logf("%d sent, %d received from the salvaged store, %d listed lost", len(sent), len(got), len(lost))
}

// receiveAll receives and deletes every message of url, by id.
func receiveAll(t *testing.T, c *sqs.Client, url string) map[string]string {
	t.Helper()
	got := make(map[string]string)
	for empty := 0; empty < 2; {
		out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range out.Messages {
			got[*m.MessageId] = *m.Body
			if _, err := c.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return got
}

// A request with both Content-Length and Transfer-Encoding: chunked gets
// its answer and then its connection closed (RFC 9112 §6.1), so bytes
// after its chunks never run as a second request.
func TestChunkedWithContentLengthClosesConnection(t *testing.T) {
	t.Parallel()
	p := startBaton(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	smuggled := "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
	req := "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n", 5+len(smuggled)) +
		"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	all, err := io.ReadAll(bufio.NewReader(conn))
	if err != nil {
		t.Fatalf("the connection stayed open: %v; read so far:\n%s", err, all)
	}
	if n := strings.Count(string(all), "HTTP/1.1 "); n != 1 {
		t.Errorf("%d answers, want 1 (the bytes after the chunks ran as a request):\n%s", n, all)
	}
	if !strings.Contains(string(all), "Connection: close") {
		t.Errorf("answer without Connection: close:\n%s", all)
	}
}
