package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/skipnote"
)

// TestBackupRestore runs `baton backup` against a server under a load of
// sends, receives and deletes (an AWS SDK client, no retries), then starts
// the built binary on the backup and drains it. It holds every message
// whose send was acknowledged before the backup began, unless a delete of
// it had begun before the backup returned; none whose send began after the
// backup returned, nor any whose delete was acknowledged before it began;
// the queue created before it and not the one created after; and a
// receipt handle issued before the backup deletes its message on the
// restored server.
func TestBackupRestore(t *testing.T) {
	t.Parallel()
	dir, backups := t.TempDir(), t.TempDir()
	p := startBatonArgs(t, "--data-dir", dir, "--account-id", account, "--backup-dir", backups)
	c := crashClient(p.URL)
	ctx := t.Context()
	const queue = "backup"
	for _, name := range []string{queue, "before-backup"} {
		if _, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name),
			Attributes: map[string]string{"VisibilityTimeout": "1"}}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	url := p.queueURL(queue)

	// A message held across the backup, its lease long.
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("held")}); err != nil {
		t.Fatal(err)
	}
	held := receiveBody(t, c, url, "held")
	if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url),
		ReceiptHandle: held.ReceiptHandle, VisibilityTimeout: 600}); err != nil {
		t.Fatal(err)
	}

	l := &backupLedger{sent: map[string]*backupOp{}, deleted: map[string][]*backupOp{}}
	loadCtx, stop := context.WithCancel(ctx)
	var load sync.WaitGroup
	for w := range 3 {
		load.Go(func() {
			for i := 0; i < 3000 && loadCtx.Err() == nil; i++ {
				l.send(loadCtx, c, url, fmt.Sprintf("w%d-%d", w, i))
			}
		})
	}
	// One receiver, slower than the senders: a backlog grows, and the
	// backup holds deleted and undeleted messages.
	for range 1 {
		load.Go(func() {
			for i := 0; i < 3000 && loadCtx.Err() == nil; i++ {
				l.receiveAndDelete(loadCtx, c, url)
			}
		})
	}
	// The backup, once the load is under way.
	testutil.CheckFor(t, 30*time.Second, func() error {
		if n := l.acked.Load(); n < 300 {
			return fmt.Errorf("%d sends acknowledged", n)
		}
		return nil
	})
	from := l.seq.Add(1)
	out, err := exec.Command(batonBin, "backup", "--endpoint", p.URL).Output()
	to := l.seq.Add(1)
	if err != nil {
		stop()
		load.Wait()
		t.Fatalf("baton backup: %v\n%s", err, exitStderr(err))
	}
	backup := strings.TrimSpace(string(out))
	if filepath.Dir(backup) != backups {
		t.Errorf("baton backup printed %q, want a directory in %s", backup, backups)
	}
	if _, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("after-backup")}); err != nil {
		t.Errorf("create a queue after the backup: %v", err)
	}
	// The load goes on a while after the backup.
	after := l.acked.Load()
	testutil.CheckFor(t, 30*time.Second, func() error {
		if n := l.acked.Load(); n < after+100 {
			return fmt.Errorf("%d sends acknowledged since the backup", n-after)
		}
		return nil
	})
	stop()
	load.Wait()
	if !strings.Contains(p.logs.String(), "backup written") {
		t.Errorf("the server did not log the backup:\n%s", p.logs)
	}

	restored := startBatonArgs(t, "--data-dir", backup, "--account-id", account)
	rc := crashClient(restored.URL)
	for name, want := range map[string]bool{queue: true, "before-backup": true, "after-backup": false} {
		_, err := rc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		var missing *types.QueueDoesNotExist
		if got := err == nil; got != want || err != nil && !errors.As(err, &missing) {
			t.Errorf("queue %s on the restored server: %v, want there=%v", name, err, want)
		}
	}
	if _, err := rc.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(restored.queueURL(queue)), ReceiptHandle: held.ReceiptHandle}); err != nil {
		t.Errorf("delete, on the restored server, by a receipt handle issued before the backup: %v", err)
	}
	got := drainBodies(t, rc, restored.queueURL(queue))
	if got["held"] {
		t.Errorf("the message deleted by its pre-backup receipt handle came back")
	}
	l.check(t, got, from, to)
}

// backupOp is one call of the load: the order of its start and return
// (0: it failed or never returned).
type backupOp struct{ start, end int64 }

// backupLedger is what the load's client was told.
type backupLedger struct {
	seq, acked atomic.Int64
	mu         sync.Mutex
	sent       map[string]*backupOp
	deleted    map[string][]*backupOp
}

func (l *backupLedger) send(ctx context.Context, c *sqs.Client, url, body string) {
	op := &backupOp{start: l.seq.Add(1)}
	l.mu.Lock()
	l.sent[body] = op
	l.mu.Unlock()
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)})
	if err == nil {
		l.mu.Lock()
		op.end = l.seq.Add(1)
		l.mu.Unlock()
		l.acked.Add(1)
	}
}

func (l *backupLedger) receiveAndDelete(ctx context.Context, c *sqs.Client, url string) {
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 2})
	if err != nil || len(out.Messages) == 0 {
		return
	}
	entries := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
	ops := map[string]*backupOp{}
	start := l.seq.Add(1)
	l.mu.Lock()
	for i, m := range out.Messages {
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle}
		op := &backupOp{start: start}
		ops[fmt.Sprint(i)] = op
		l.deleted[*m.Body] = append(l.deleted[*m.Body], op)
	}
	l.mu.Unlock()
	res, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil {
		return
	}
	l.mu.Lock()
	end := l.seq.Add(1)
	for _, ok := range res.Successful {
		ops[*ok.Id].end = end
	}
	l.mu.Unlock()
}

// check compares the bodies drained from the restored server with the
// ledger, for a backup begun at from and returned at to.
func (l *backupLedger) check(t *testing.T, got map[string]bool, from, to int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept, lost, leaked, back := 0, 0, 0, 0
	for body, s := range l.sent {
		// Whether a delete of it began before the backup returned, and
		// whether one was acknowledged before it began.
		deleteBegun, deleteAcked := false, false
		for _, d := range l.deleted[body] {
			deleteBegun = deleteBegun || d.start < to
			deleteAcked = deleteAcked || d.end != 0 && d.end < from
		}
		switch {
		case s.end != 0 && s.end < from && !deleteBegun && !got[body]:
			lost++
			if lost <= 10 {
				t.Errorf("LOST: %q, sent and acknowledged before the backup, not deleted before it returned, is not in it", body)
			}
		case got[body] && s.start > to:
			leaked++
			if leaked <= 10 {
				t.Errorf("LEAKED: %q, sent after the backup returned, is in it", body)
			}
		case got[body] && deleteAcked:
			back++
			if back <= 10 {
				t.Errorf("BACK: %q, its delete acknowledged before the backup, is in it", body)
			}
		case got[body]:
			kept++
		}
	}
	for body := range got {
		if l.sent[body] == nil {
			t.Errorf("PHANTOM: %q on the restored server, never sent", body)
		}
	}
	deletes := 0
	for _, ds := range l.deleted {
		for _, d := range ds {
			if d.end != 0 && d.end < from {
				deletes++
				break
			}
		}
	}
	t.Logf("backup under load: %d sends (%d acknowledged before the backup began), %d messages deleted before it; %d messages in the restored backup; %d lost, %d leaked, %d back",
		len(l.sent), l.ackedBefore(from), deletes, kept, lost, leaked, back)
}

// ackedBefore counts the sends acknowledged before from.
func (l *backupLedger) ackedBefore(from int64) int {
	n := 0
	for _, s := range l.sent {
		if s.end != 0 && s.end < from {
			n++
		}
	}
	return n
}

// receiveBody receives messages from url until one has body, and returns it.
func receiveBody(t *testing.T, c *sqs.Client, url, body string) types.Message {
	t.Helper()
	var found types.Message
	testutil.CheckFor(t, 30*time.Second, func() error {
		out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 1})
		if err != nil {
			return err
		}
		for _, m := range out.Messages {
			if *m.Body == body {
				found = m
				return nil
			}
		}
		return fmt.Errorf("no message %q yet", body)
	})
	return found
}

// drainBodies receives and deletes every message of url until receives
// have found nothing for longer than the queue's visibility timeout, and
// returns the bodies.
func drainBodies(t *testing.T, c *sqs.Client, url string) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	deadline := time.Now().Add(60 * time.Second)
	var emptySince time.Time
	for time.Now().Before(deadline) {
		out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			WaitTimeSeconds: 1, VisibilityTimeout: 60})
		if err != nil {
			t.Fatalf("drain: %v", err)
		}
		if len(out.Messages) == 0 {
			if emptySince.IsZero() {
				emptySince = time.Now()
			}
			if time.Since(emptySince) > 3*time.Second { // the queue's leases are 1 s
				return got
			}
			continue
		}
		emptySince = time.Time{}
		entries := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
		for i, m := range out.Messages {
			got[*m.Body] = true
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle}
		}
		if _, err := c.DeleteMessageBatch(t.Context(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil {
			t.Fatalf("drain: delete: %v", err)
		}
	}
	t.Fatalf("drain: messages still coming after 60 s")
	return nil
}

// exitStderr is the standard error of a command that failed.
func exitStderr(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(exit.Stderr)
	}
	return ""
}

// TestBackupOntoBadDisk runs `baton backup` against the built server whose
// --backup-dir is a full tmpfs, then a read-only one: the backup fails,
// exit 1, with the error the disk gave, leaves no unfinished copy behind,
// and the server serves on. On the read-only disk the error used to add
// that the unfinished copy could not be removed and was to be removed by
// hand, holding tables on the disk: the copy was never made (its creation
// failed), and the kernel fails the removal of a name a read-only file
// system does not hold with EROFS too.
func TestBackupOntoBadDisk(t *testing.T) {
	skipnote.SkipUnlessLong(t, "backups onto a full and a read-only tmpfs")
	t.Parallel()
	for _, tc := range []struct {
		name, says string
		spoil      func(t *testing.T, mnt string)
	}{
		{"full", "no space left on device", func(t *testing.T, mnt string) { fillDisk(t, mnt) }},
		{"read-only", "read-only file system", func(t *testing.T, mnt string) {
			if out, err := run("mount", "-o", "remount,ro", mnt); err != nil {
				t.Fatalf("remount %s read-only: %v: %s", mnt, err, out)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mnt := mountTmpfs(t, "4m")
			tc.spoil(t, mnt)
			p := startBatonArgs(t, "--data-dir", t.TempDir(), "--account-id", account, "--backup-dir", mnt)
			c, url := diskQueue(t, p)
			out, code := runBaton(t, "backup", "--endpoint", p.URL)
			t.Logf("baton backup: exit %d: %s", code, out)
			if code != 1 || !strings.Contains(out, tc.says) || strings.Contains(out, "could not be removed") {
				t.Errorf("baton backup onto a %s disk: exit %d, output:\n%s\nwant exit 1 with %q alone", tc.name, code, out, tc.says)
			}
			if partial, _ := filepath.Glob(filepath.Join(mnt, "*.partial")); len(partial) > 0 {
				t.Errorf("unfinished copies left: %v", partial)
			}
			if _, err := c.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("after")}); err != nil {
				t.Errorf("send after the failed backup: %v", err)
			}
		})
	}
}
