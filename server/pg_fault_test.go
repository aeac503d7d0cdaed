package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/poll"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/store/pgstore"
)

// pgNode is a server on a PostgreSQL store, with /healthz asking the
// store, on the system clock, as baton serve runs it.
type pgNode struct {
	url    string
	client *sqs.Client
	store  *pgstore.Store
}

// startPGNode opens a store on dbURL and serves it on a free port until the
// test ends.
func startPGNode(t *testing.T, dbURL string, opts pgstore.Options) *pgNode {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	store, err := pgstore.Open(context.Background(), dbURL, opts)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Store: store, Clock: clock.System{}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: server.New(server.Config{Engine: eng, Ready: eng.StoreReady(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		eng.Close()
		store.Close()
	})
	url := "http://" + ln.Addr().String()
	return &pgNode{url: url, client: testutil.NewClient(url), store: store}
}

// health is one answer of /healthz.
type health struct {
	start, end time.Time
	status     int // 0: no answer
	body       string
}

// healthz asks the node's /healthz once, waiting up to 10 s.
func (n *pgNode) healthz() health {
	h := health{start: time.Now()}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(n.url + "/healthz")
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		h.status, h.body = resp.StatusCode, strings.TrimSpace(string(b))
	}
	h.end = time.Now()
	return h
}

// callResult is one SDK call: what, when, how long, and its error.
type callResult struct {
	op         string
	start, end time.Time
	err        error
}

// errStatus is the HTTP status of an SDK call's error, 0 if it has none.
func errStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// TestFrozenPrimaryAnsweredWithinBound freezes the database (SIGSTOP of
// PostgreSQL and every backend, as a hung machine) for longer than the
// store's retry bound (the default, 5 s, which docs/postgresql.md states)
// under a load of standard and FIFO sends, receives and deletes through the
// AWS SDK. Every call is answered, within the bound and some slack for a
// loaded machine: success or 503 ServiceUnavailable, never 500 and never a
// client timeout. /healthz fails while the database is frozen and passes
// again after. Every acknowledged send is received afterwards.
func TestFrozenPrimaryAnsweredWithinBound(t *testing.T) {
	t.Parallel()
	pg := pgtest.MustStart(t)
	node := startPGNode(t, pg.MustDatabase(t), pgstore.Options{})
	bound := pgstore.DefaultRetryFor
	const slack = 3 * time.Second // a call makes up to three store operations; a loaded 2-core machine
	ctx := context.Background()
	std, err := node.client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("frozen")})
	if err != nil {
		t.Fatal(err)
	}
	fifo, err := node.client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("frozen.fifo"),
		Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})
	if err != nil {
		t.Fatal(err)
	}

	var (
		mu      sync.Mutex
		calls   []callResult
		acked   = map[string]bool{} // bodies of acknowledged sends
		healths []health
	)
	record := func(op string, start time.Time, err error) {
		mu.Lock()
		calls = append(calls, callResult{op, start, time.Now(), err})
		mu.Unlock()
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	loop := func(f func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				f(i)
			}
		}()
	}
	callCtx := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 40*time.Second) }
	for w := range 2 {
		loop(func(i int) {
			body := fmt.Sprintf("std-%d-%d", w, i)
			c, cancel := callCtx()
			defer cancel()
			start := time.Now()
			_, err := node.client.SendMessage(c, &sqs.SendMessageInput{QueueUrl: std.QueueUrl, MessageBody: aws.String(body)})
			record("SendMessage", start, err)
			if err == nil {
				mu.Lock()
				acked[body] = true
				mu.Unlock()
			}
		})
		loop(func(i int) {
			body := fmt.Sprintf("fifo-%d-%d", w, i)
			c, cancel := callCtx()
			defer cancel()
			start := time.Now()
			_, err := node.client.SendMessage(c, &sqs.SendMessageInput{QueueUrl: fifo.QueueUrl, MessageBody: aws.String(body),
				MessageGroupId: aws.String(fmt.Sprint("g", w))})
			record("SendMessage (FIFO)", start, err)
			if err == nil {
				mu.Lock()
				acked[body] = true
				mu.Unlock()
			}
		})
	}
	// A consumer receives and deletes: what it deletes was received, so it
	// counts as delivered. A receive answered 503 may have leased messages
	// nobody got (docs/postgresql.md, "What a 503 means"): they come back
	// when this lease ends.
	const loadLease = 10
	var delivered sync.Map
	loop(func(int) {
		c, cancel := callCtx()
		defer cancel()
		start := time.Now()
		out, err := node.client.ReceiveMessage(c, &sqs.ReceiveMessageInput{QueueUrl: std.QueueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: loadLease})
		record("ReceiveMessage", start, err)
		if err != nil {
			return
		}
		for _, m := range out.Messages {
			delivered.Store(*m.Body, true)
			start := time.Now()
			_, err := node.client.DeleteMessage(c, &sqs.DeleteMessageInput{QueueUrl: std.QueueUrl, ReceiptHandle: m.ReceiptHandle})
			record("DeleteMessage", start, err)
		}
	})
	loop(func(int) {
		h := node.healthz()
		mu.Lock()
		healths = append(healths, h)
		mu.Unlock()
		time.Sleep(200 * time.Millisecond)
	})

	time.Sleep(time.Second) // the load runs
	const frozenFor = 8 * time.Second
	frozeAt := time.Now()
	if err := pg.Freeze(frozenFor); err != nil {
		t.Fatal(err)
	}
	time.Sleep(frozenFor)
	if err := pg.Thaw(); err != nil {
		t.Fatal(err)
	}
	thawedAt := time.Now()
	// Load runs on until /healthz passes again.
	poll.For(t, 30*time.Second, func() error {
		if h := node.healthz(); h.status != http.StatusOK {
			return fmt.Errorf("/healthz %d %q", h.status, h.body)
		}
		return nil
	})
	close(stop)
	wg.Wait()

	var answered503, slowest int
	var slowestTook time.Duration
	for i, c := range calls {
		took := c.end.Sub(c.start)
		if took > slowestTook {
			slowest, slowestTook = i, took
		}
		if c.err == nil {
			continue
		}
		var ae smithy.APIError
		if errors.As(c.err, &ae) && ae.ErrorCode() == "ServiceUnavailable" && errStatus(c.err) == http.StatusServiceUnavailable {
			answered503++
			continue
		}
		t.Errorf("%s at %v after the freeze: %v (HTTP %d); want success or 503 ServiceUnavailable",
			c.op, c.start.Sub(frozeAt).Round(time.Millisecond), c.err, errStatus(c.err))
	}
	if slowestTook > bound+slack {
		c := calls[slowest]
		t.Errorf("%s begun %v after the freeze took %v; want every call answered within the %v bound (+%v slack)",
			c.op, c.start.Sub(frozeAt).Round(time.Millisecond), slowestTook.Round(time.Millisecond), bound, slack)
	}
	if answered503 == 0 {
		t.Error("no call was answered 503 while the database was frozen: the freeze did not bite")
	}
	t.Logf("%d calls, %d answered 503, the slowest %v; frozen %v", len(calls), answered503, slowestTook.Round(time.Millisecond), thawedAt.Sub(frozeAt).Round(time.Millisecond))

	// /healthz: every answer to a check begun at least the store's stall
	// threshold plus a second into the freeze, and ended before the thaw,
	// is a failure; at least one such check ran.
	failing := 0
	for _, h := range healths {
		if h.start.After(frozeAt.Add(3*time.Second)) && h.end.Before(thawedAt) {
			if h.status == http.StatusOK {
				t.Errorf("/healthz answered 200 %v into the freeze", h.start.Sub(frozeAt).Round(time.Millisecond))
			}
			failing++
		}
	}
	if failing == 0 {
		t.Error("no /healthz check ran within the freeze")
	}

	// Every acknowledged send is received: at once, or once the lease of a
	// receive whose answer was lost has ended. The drain takes from each
	// queue for as long as it yields, however long that takes on a loaded
	// machine (a FIFO queue gives ten messages a receive); only looks that
	// find both queues empty are bounded, by the load's lease and 30 s.
	missing := func() (std, fifo int) {
		for body := range acked {
			if _, ok := delivered.Load(body); !ok {
				if strings.HasPrefix(body, "fifo-") {
					fifo++
				} else {
					std++
				}
			}
		}
		return std, fifo
	}
	drainStart := time.Now()
	drainUntil := drainStart.Add(loadLease*time.Second + 30*time.Second)
	lapsed := -1 // missing when the queues first ran empty
	for {
		got := drainQueue(t, node.client, std.QueueUrl, &delivered) + drainQueue(t, node.client, fifo.QueueUrl, &delivered)
		s, f := missing()
		if s+f == 0 || got == 0 && time.Now().After(drainUntil) {
			break
		}
		if got == 0 && lapsed < 0 {
			lapsed = s + f
		}
	}
	s, f := missing()
	if lapsed > 0 {
		t.Logf("%d acknowledged sends came back only when the lease of a receive answered 503 ended", lapsed-s-f)
	}
	t.Logf("drained in %v", time.Since(drainStart).Round(time.Millisecond))
	if s+f > 0 {
		t.Errorf("%d of %d acknowledged sends never received (%d standard, %d FIFO)", s+f, len(acked), s, f)
	}
}

// drainQueue receives and deletes the queue's messages until a receive
// waiting a second finds none, marks each delivered and returns how many
// it received.
func drainQueue(t *testing.T, client *sqs.Client, q *string, delivered *sync.Map) int {
	t.Helper()
	ctx := context.Background()
	got := 0
	for {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q, MaxNumberOfMessages: 10, VisibilityTimeout: 300, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatalf("drain after the thaw: %v", err)
		}
		if len(out.Messages) == 0 {
			return got
		}
		got += len(out.Messages)
		var entries []types.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			delivered.Store(*m.Body, true)
			entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
		}
		del, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: q, Entries: entries})
		if err != nil {
			t.Fatalf("delete after the thaw: %v", err)
		}
		if len(del.Failed) > 0 {
			t.Fatalf("delete after the thaw: %d failed: %s", len(del.Failed), aws.ToString(del.Failed[0].Message))
		}
	}
}

// TestCommitWaitingForStandbyAnsweredTruly: with every commit waiting for a
// synchronous standby that never comes (synchronous_standby_names names
// none that is connected), a send, a FIFO send and a delete are answered
// within the bound with 503 ServiceUnavailable whose message says that the
// change may or may not have been made, since the commit was sent and its
// outcome is unknown; one request is abandoned by its client mid-commit.
// /healthz says commits are not completing. When the standby requirement
// is lifted the waiting commits complete: each change was made, once, as
// the answer allowed. (A plain 503 there would have been a lie: it means
// the call was not carried out, docs/postgresql.md.)
func TestCommitWaitingForStandbyAnsweredTruly(t *testing.T) {
	t.Parallel()
	pg := pgtest.MustStart(t)
	dbURL := pg.MustDatabase(t)
	const bound = 2 * time.Second
	node := startPGNode(t, dbURL, pgstore.Options{RetryFor: bound})
	ctx := context.Background()
	std, err := node.client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("waiting")})
	if err != nil {
		t.Fatal(err)
	}
	fifo, err := node.client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("waiting.fifo"),
		Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := node.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: std.QueueUrl, MessageBody: aws.String("to-delete")}); err != nil {
		t.Fatal(err)
	}
	got, err := node.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: std.QueueUrl, VisibilityTimeout: 300})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("receive: %v, %v", got, err)
	}

	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	exec := func(sql string) {
		t.Helper()
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// pgtest runs with synchronous_commit off; the database's own setting
	// wins for new sessions, so the store's connections are made anew.
	exec(`ALTER DATABASE ` + pgx.Identifier{pgtest.DatabaseName(dbURL)}.Sanitize() + ` SET synchronous_commit = on`)
	exec(`ALTER SYSTEM SET synchronous_standby_names = 'nobody'`)
	exec(`SELECT pg_reload_conf()`)
	exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	released := false
	release := func() {
		if !released {
			released = true
			exec(`ALTER SYSTEM RESET synchronous_standby_names`)
			exec(`SELECT pg_reload_conf()`)
		}
	}
	defer release()

	calls := map[string]func(ctx context.Context) error{
		"send": func(ctx context.Context) error {
			_, err := node.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: std.QueueUrl, MessageBody: aws.String("waited")})
			return err
		},
		"FIFO send": func(ctx context.Context) error {
			_, err := node.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: fifo.QueueUrl, MessageBody: aws.String("waited-fifo"),
				MessageGroupId: aws.String("g")})
			return err
		},
		"delete": func(ctx context.Context) error {
			_, err := node.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: std.QueueUrl, ReceiptHandle: got.Messages[0].ReceiptHandle})
			return err
		},
	}
	var wg sync.WaitGroup
	for name, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, cancel := context.WithTimeout(ctx, 40*time.Second)
			defer cancel()
			start := time.Now()
			err := call(c)
			took := time.Since(start)
			var ae smithy.APIError
			switch {
			case err == nil:
				t.Errorf("%s acknowledged while its commit waits for a standby", name)
			case !errors.As(err, &ae) || ae.ErrorCode() != "ServiceUnavailable" || errStatus(err) != http.StatusServiceUnavailable:
				t.Errorf("%s: %v; want 503 ServiceUnavailable", name, err)
			case !strings.Contains(ae.ErrorMessage(), "may or may not have been made"):
				t.Errorf("%s answered 503 %q; want it to say the change may have been made", name, ae.ErrorMessage())
			}
			if took > bound+3*time.Second {
				t.Errorf("%s answered after %v; want within the %v bound", name, took.Round(time.Millisecond), bound)
			}
		}()
	}
	poll.For(t, 20*time.Second, func() error {
		if h := node.healthz(); h.status == http.StatusOK || !strings.Contains(h.body, "commits not completing") {
			return fmt.Errorf("/healthz %d %q", h.status, h.body)
		}
		return nil
	})
	wg.Wait()

	// A send whose client gives up once its commit waits: the commit is not
	// cut short (no cancel turns it into one on the primary alone).
	waiting := func() (n int) {
		t.Helper()
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := waiting()
	abandoned, cancel := context.WithCancel(ctx)
	sent := make(chan error, 1)
	go func() {
		_, err := node.client.SendMessage(abandoned, &sqs.SendMessageInput{QueueUrl: std.QueueUrl, MessageBody: aws.String("abandoned")})
		sent <- err
	}()
	poll.For(t, 20*time.Second, func() error {
		if n := waiting(); n <= before {
			return fmt.Errorf("%d commits wait for a standby, as before the abandoned send", n)
		}
		return nil
	})
	cancel()
	if err := <-sent; err == nil {
		t.Error("the abandoned send was acknowledged")
	}

	var visible int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM baton_messages WHERE body IN ('waited', 'waited-fifo', 'abandoned')`).Scan(&visible); err != nil {
		t.Fatal(err)
	}
	if visible != 0 {
		t.Errorf("%d of the waiting sends visible before any standby confirmed them: a commit was cut short", visible)
	}

	release()
	poll.For(t, 30*time.Second, func() error {
		var n, left int
		if err := admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE body IN ('waited', 'waited-fifo', 'abandoned')),
			count(*) FILTER (WHERE body = 'to-delete') FROM baton_messages`).Scan(&n, &left); err != nil {
			return err
		}
		if n != 3 || left != 0 {
			return fmt.Errorf("%d of the 3 sends stored, %d deleted message left", n, left)
		}
		return nil
	})
	poll.For(t, 30*time.Second, func() error {
		if h := node.healthz(); h.status != http.StatusOK {
			return fmt.Errorf("/healthz %d %q", h.status, h.body)
		}
		return nil
	})
}

// TestFrozenPrimaryLeftForTheNext: a node whose URL lists two hosts with
// target_session_attrs=read-write, the first frozen (SIGSTOP) and the
// second taking writes (a standby promoted meanwhile, as a failover leaves
// it), moves its connections to the second promptly: sends succeed again
// within the retry bound plus the connect timeout spent on the frozen host
// (and slack for a loaded machine), and /healthz passes again while the
// first host is still frozen.
func TestFrozenPrimaryLeftForTheNext(t *testing.T) {
	t.Parallel()
	first, second := pgtest.MustStart(t), pgtest.MustStart(t)
	firstURL, secondURL := first.MustDatabase(t), second.MustDatabase(t)
	db := pgtest.DatabaseName(firstURL)
	if pgtest.DatabaseName(secondURL) != db {
		t.Fatalf("the clusters' databases are %s and %s; want one name", db, pgtest.DatabaseName(secondURL))
	}
	// The second host gets the schema, then the first's queues, as if
	// replicated: the node may open a connection to either.
	ctx := context.Background()
	if s, err := pgstore.Open(ctx, secondURL, pgstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}); err != nil {
		t.Fatal(err)
	} else {
		s.Close()
	}
	q, err := startPGNode(t, firstURL, pgstore.Options{}).client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("moving")})
	if err != nil {
		t.Fatal(err)
	}
	copyQueues(t, firstURL, secondURL)
	node := startPGNode(t, pgtest.MultiHostURL(db, first, second)+"&target_session_attrs=read-write", pgstore.Options{})

	var mu sync.Mutex
	var lastFailure, firstSuccessAfter time.Time
	var frozeAt time.Time
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c, cancel := context.WithTimeout(ctx, 40*time.Second)
				_, err := node.client.SendMessage(c, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(fmt.Sprint(w, "-", i))})
				cancel()
				now := time.Now()
				mu.Lock()
				switch {
				case err != nil:
					lastFailure = now
					var ae smithy.APIError
					if !errors.As(err, &ae) || ae.ErrorCode() != "ServiceUnavailable" {
						t.Errorf("send: %v; want success or 503 ServiceUnavailable", err)
					}
				case !frozeAt.IsZero() && firstSuccessAfter.IsZero() && now.Sub(frozeAt) > pgstore.DefaultRetryFor/2:
					// (Sends answered just after the freeze were committed
					// before it.)
					firstSuccessAfter = now
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Second)
	mu.Lock()
	frozeAt = time.Now()
	mu.Unlock()
	if err := first.Freeze(40 * time.Second); err != nil {
		t.Fatal(err)
	}
	defer first.Thaw()
	poll.For(t, 30*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if firstSuccessAfter.IsZero() {
			return errors.New("no send acknowledged since the freeze")
		}
		return nil
	})
	poll.For(t, 30*time.Second, func() error {
		if h := node.healthz(); h.status != http.StatusOK {
			return fmt.Errorf("/healthz %d %q", h.status, h.body)
		}
		return nil
	})
	// The load runs on past the limit, to see that no send fails after it.
	// The bound, then a connect timeout on the frozen host for each new
	// connection a call opens (a queue read and a send), and slack.
	limit := pgstore.DefaultRetryFor + 2*2*time.Second + 4*time.Second
	time.Sleep(time.Until(frozeAt.Add(limit + 2*time.Second)))
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	back, failed := firstSuccessAfter.Sub(frozeAt), lastFailure.Sub(frozeAt)
	t.Logf("sends acknowledged again %v after the freeze; the last failure %v after it", back.Round(time.Millisecond), failed.Round(time.Millisecond))
	if back > limit {
		t.Errorf("sends acknowledged again %v after the first host froze; want within %v", back.Round(time.Millisecond), limit)
	}
	if failed > limit {
		t.Errorf("a send failed %v after the first host froze; want none after %v, the node on the second host", failed.Round(time.Millisecond), limit)
	}
}

// copyQueues copies the queue rows of the database at from into the one at
// to, which has the schema and no queues.
func copyQueues(t *testing.T, from, to string) {
	t.Helper()
	ctx := context.Background()
	src, err := pgx.Connect(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close(ctx)
	dst, err := pgx.Connect(ctx, to)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close(ctx)
	var rows bytes.Buffer
	if _, err := src.PgConn().CopyTo(ctx, &rows, `COPY baton_queues TO STDOUT`); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.PgConn().CopyFrom(ctx, &rows, `COPY baton_queues FROM STDIN`); err != nil {
		t.Fatal(err)
	}
}
