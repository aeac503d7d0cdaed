package cli_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/store/memstore"
)

// startAuthServer starts an in-process server on 127.0.0.1:0 that requires
// requests signed by cred at the wall clock's time, as the binary signs.
func startAuthServer(t *testing.T, cred sigv4.Credential) string {
	t.Helper()
	store := memstore.New()
	eng, err := engine.New(engine.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	v, err := sigv4.NewVerifier(clock.System{}, []sigv4.Credential{cred})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: server.New(server.Config{Engine: eng, Verifier: v})}
	go srv.Serve(ln)
	t.Cleanup(func() {
		eng.Close()
		srv.Close()
		store.Close()
	})
	return "http://" + ln.Addr().String()
}

// The client commands find credentials as the AWS CLI does: AWS_*
// variables, or a profile of the shared files chosen by --profile or
// AWS_PROFILE. Without any they sign with dummy credentials, which a server
// with authentication refuses with its SQS error.
func TestCLICredentials(t *testing.T) {
	t.Parallel()
	cred := sigv4.Credential{AccessKeyID: "AKIDCLITEST", SecretAccessKey: "cli/test+secret", Account: "123456789012"}
	url := startAuthServer(t, cred)

	dir := t.TempDir()
	credsFile := filepath.Join(dir, "credentials")
	configFile := filepath.Join(dir, "config")
	if err := os.WriteFile(credsFile, []byte("[baton-test]\naws_access_key_id = AKIDCLITEST\naws_secret_access_key = cli/test+secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(configFile, []byte("[profile baton-test]\nregion = eu-west-1\n[profile broken]\ncredential_process = exit 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	files := []string{"AWS_SHARED_CREDENTIALS_FILE=" + credsFile, "AWS_CONFIG_FILE=" + configFile}

	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"--profile", files, []string{"--profile", "baton-test"}},
		{"AWS_PROFILE", append(files, "AWS_PROFILE=baton-test"), nil},
		{"AWS_ACCESS_KEY_ID", []string{"AWS_ACCESS_KEY_ID=AKIDCLITEST", "AWS_SECRET_ACCESS_KEY=cli/test+secret"}, nil},
	} {
		args := append([]string{"queue", "create", "jobs", "--endpoint", url}, tc.args...)
		r := runCLI(t, cliEnv(t, tc.env...), nil, args...)
		if r.code != 0 || r.stdout != url+"/123456789012/jobs\n" {
			t.Errorf("%s: %v\nwant the queue URL in the key's account", tc.name, r)
		}
	}

	// No credentials at all: dummy ones, refused by this server.
	r := runCLI(t, cliEnv(t), nil, "queue", "list", "--endpoint", url)
	if r.code != 1 || !strings.Contains(r.stderr, "baton: InvalidClientTokenId: The security token included in the request is invalid.") {
		t.Errorf("without credentials: %v\nwant exit 1 and InvalidClientTokenId", r)
	}
	// A profile that does not exist is an error, not a silent fallback.
	r = runCLI(t, cliEnv(t, files...), nil, "queue", "list", "--endpoint", url, "--profile", "nosuch")
	if r.code != 1 || !strings.Contains(r.stderr, "nosuch") {
		t.Errorf("--profile nosuch: %v\nwant exit 1 naming the profile", r)
	}
	r = runCLI(t, cliEnv(t, append(files, "AWS_PROFILE=nosuch")...), nil, "queue", "list", "--endpoint", url)
	if r.code != 1 || !strings.Contains(r.stderr, "nosuch") {
		t.Errorf("AWS_PROFILE=nosuch: %v\nwant exit 1 naming the profile", r)
	}
	// So is a credential source that fails, as in the AWS CLI.
	for name, env := range map[string][]string{
		"--profile broken":   append(files, "BATON_ENDPOINT="+url, "AWS_PROFILE=baton-test"),
		"AWS_PROFILE=broken": append(files, "BATON_ENDPOINT="+url, "AWS_PROFILE=broken"),
	} {
		args := []string{"queue", "list"}
		if name == "--profile broken" {
			args = append(args, "--profile", "broken")
		}
		r = runCLI(t, cliEnv(t, env...), nil, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "baton: load AWS credentials:") || !strings.Contains(r.stderr, "credential_process") {
			t.Errorf("%s, whose credential_process fails: %v\nwant exit 1 and the credential error", name, r)
		}
	}
}

// The client commands find the endpoint as the AWS tools do: --endpoint,
// then AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL and BATON_ENDPOINT, the first
// set winning; with none, a full queue URL's host.
func TestCLIEndpointResolution(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	url := srv.MustCreateQueue(t, "work", nil)
	const dead = "http://127.0.0.1:1" // nothing listens on port 1
	for _, tt := range []struct {
		name string
		env  []string
		args []string
	}{
		{"AWS_ENDPOINT_URL", []string{"AWS_ENDPOINT_URL=" + srv.URL}, nil},
		{"AWS_ENDPOINT_URL_SQS first", []string{"AWS_ENDPOINT_URL_SQS=" + srv.URL, "AWS_ENDPOINT_URL=" + dead, "BATON_ENDPOINT=" + dead}, nil},
		{"AWS_ENDPOINT_URL before BATON_ENDPOINT", []string{"AWS_ENDPOINT_URL=" + srv.URL, "BATON_ENDPOINT=" + dead}, nil},
		{"BATON_ENDPOINT", []string{"BATON_ENDPOINT=" + srv.URL}, nil},
		{"--endpoint first", []string{"AWS_ENDPOINT_URL_SQS=" + dead}, []string{"--endpoint", srv.URL}},
	} {
		r := runCLI(t, cliEnv(t, tt.env...), nil, append([]string{"queue", "get", "work"}, tt.args...)...)
		if r.code != 0 || !strings.Contains(r.stdout, "VisibilityTimeout") {
			t.Errorf("%s: queue get work: %v", tt.name, r)
		}
	}
	// A full queue URL and nothing else: its host. Every command that takes
	// a queue.
	for _, args := range [][]string{
		{"send", url, "hello"},
		{"receive", url, "--wait", "0"},
		{"queue", "get", url},
		{"doctor", url},
		{"worker", "--queue-url", url, "--command", "cat", "--check"},
	} {
		if r := runCLI(t, cliEnv(t), nil, args...); r.code != 0 {
			t.Errorf("%s without an endpoint: %v", strings.Join(args, " "), r)
		}
	}
	// An endpoint given wins over the queue URL's host.
	if r := runCLI(t, cliEnv(t, "AWS_ENDPOINT_URL="+dead), nil, "queue", "get", url); r.code != 1 || !strings.Contains(r.stderr, "cannot reach") {
		t.Errorf("queue get URL with AWS_ENDPOINT_URL=%s: %v\nwant it sent there, and refused", dead, r)
	}
	// bench reads the variables too.
	r := runCLI(t, cliEnv(t, "AWS_ENDPOINT_URL="+srv.URL), nil, "bench", "--scenario", "send", "--duration", "100ms",
		"--warmup", "0s", "--concurrency", "1", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"endpoint": "`+srv.URL+`"`) {
		t.Errorf("bench with AWS_ENDPOINT_URL: %v", r)
	}
}

// A server that takes the connection and never answers (stuck, or
// something else on its port) ends a client command after --timeout with
// one line naming the cause, as the AWS CLI's read timeout does, instead of
// leaving it waiting for ever: the SQS API's commands and the admin API's.
func TestCLIServerThatNeverAnswers(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	endpoint := "http://" + ln.Addr().String()
	for _, args := range [][]string{
		{"queue", "list"},
		{"send", "http://" + ln.Addr().String() + "/000000000000/jobs", "hi"},
		{"peek", "jobs"},
		{"export", filepath.Join(t.TempDir(), "state.json")},
	} {
		args = append(args, "--timeout", "1s")
		stderr := mustFail(t, endpoint, "did not answer within --timeout", args...)
		if strings.Count(strings.TrimRight(stderr, "\n"), "\n") != 0 {
			t.Errorf("baton %s: want one line on stderr, got %q", strings.Join(args, " "), stderr)
		}
	}
	mustFail(t, endpoint, "--timeout 0s: want more than 0s", "queue", "list", "--timeout", "0")
}

// A wrong secret is refused with SignatureDoesNotMatch, whose message goes
// on, as AWS's does, with the canonical request and the string to sign: the
// client commands print its first line alone, one line that names the cause.
func TestCLIWrongSecretIsOneLine(t *testing.T) {
	t.Parallel()
	cred := sigv4.Credential{AccessKeyID: "AKIDCLITEST", SecretAccessKey: "right", Account: "123456789012"}
	url := startAuthServer(t, cred)
	env := cliEnv(t, "AWS_ACCESS_KEY_ID=AKIDCLITEST", "AWS_SECRET_ACCESS_KEY=wrong")
	for _, args := range [][]string{{"queue", "list"}, {"send", "jobs", "hi"}, {"topic", "list"}, {"peek", "jobs"}} {
		r := runCLI(t, env, nil, append(args, "--endpoint", url)...)
		if r.code != 1 || !strings.Contains(r.stderr, "SignatureDoesNotMatch: The request signature we calculated does not match") ||
			strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("baton %s: %v\nwant exit 1 and SignatureDoesNotMatch on one line", strings.Join(args, " "), r)
		}
	}
}

// A receive's long poll is the server holding the request on purpose:
// --timeout counts from the end of the longest wait, so a server that
// waits longer than --timeout for a message, as it may, is no failure.
func TestCLIReceiveTimeoutCountsFromTheWait(t *testing.T) {
	t.Parallel()
	const wait = 6 * time.Second // what the server holds the receive for: over --timeout
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") != "AmazonSQS.ReceiveMessage" {
			http.Error(w, "only ReceiveMessage", http.StatusBadRequest)
			return
		}
		select { // a long poll that no message ends
		case <-time.After(wait):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		io.WriteString(w, "{}")
	}))
	t.Cleanup(srv.Close)
	r := runCLI(t, cliEnv(t), nil, "receive", srv.URL+"/000000000000/jobs", "--wait", "20", "--timeout", "3s")
	if r.code != 0 || r.stdout != "" {
		t.Errorf("a receive the server held %v, with --timeout 3s: %v\nwant exit 0 and no messages", wait, r)
	}
}

// A region that cannot be one (not lowercase letters, digits and hyphens,
// whatever its case) is refused before anything is sent, in one line
// naming where it came from; the SDK's "failed to bind endpoint params" or
// the server's refusal of the signature said it before. A name AWS has no
// region of is a namespace of its own, and an upper-case one is the server's
// lower-case one.
func TestCLIRegionThatCannotBeOne(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	const rule = "is not a region name: a region is 1 to 64 lowercase letters, digits and hyphens, like us-east-1"
	for _, tt := range []struct {
		env  []string
		args []string
		from string
	}{
		{nil, []string{"queue", "list", "--region", "us east 1"}, `baton: --region: "us east 1" ` + rule},
		{nil, []string{"queue", "list", "--region", "eu_west_1"}, `baton: --region: "eu_west_1" ` + rule},
		{nil, []string{"send", "jobs", "x", "--region", "a.b"}, `baton: --region: "a.b" ` + rule},
		{[]string{"AWS_REGION=us east 1"}, []string{"queue", "list"}, `baton: the AWS configuration's region (AWS_REGION, AWS_DEFAULT_REGION or the profile's): "us east 1" ` + rule},
		{nil, []string{"bench", "--region", "a b", "--duration", "100ms"}, `baton: --region (or AWS_REGION, AWS_DEFAULT_REGION): "a b" ` + rule},
		{nil, []string{"proxy", "--upstream", "http://127.0.0.1:1", "--listen", "127.0.0.1:0", "--region", "a b"}, `baton: --region: "a b" ` + rule},
	} {
		r := runCLI(t, cliEnv(t, append(tt.env, "BATON_ENDPOINT="+srv.URL)...), nil, tt.args...)
		if r.code != 1 || r.stderr != tt.from+"\n" || r.stdout != "" {
			t.Errorf("%v %s: %v\nwant exit 1 and the one line %q", tt.env, strings.Join(tt.args, " "), r, tt.from)
		}
	}
	mars := mustSucceed(t, srv.URL, "queue", "create", "jobs", "--region", "mars")
	if got := mustSucceed(t, srv.URL, "queue", "list", "--region", "MARS"); got != mars {
		t.Errorf("queue list --region MARS: %q, want mars's queue %q", got, mars)
	}
	if got := mustSucceed(t, srv.URL, "queue", "list"); strings.Contains(got, "jobs") {
		t.Errorf("queue list of us-east-1: %q, want no queue of mars", got)
	}
}

// receive --delete that prints the messages and then fails to delete them
// names the queue, as every other error on a queue does, then that the
// delete failed: the whole request, or some of its entries.
func TestCLIReceiveDeleteErrorNamesTheQueue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		status       int
		answer, want string
	}{
		{"refused", http.StatusBadRequest, `{"__type":"com.amazonaws.sqs#AccessDenied","message":"no deleting here"}`,
			"baton: queue jobs: delete: AccessDenied: no deleting here\n"},
		{"entry failed", http.StatusOK, `{"Successful":[],"Failed":[{"Id":"0","Code":"ReceiptHandleIsInvalid","Message":"stale","SenderFault":true}]}`,
			"baton: queue jobs: delete: 1 of 1 messages were not deleted; m-1: ReceiptHandleIsInvalid: stale\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				switch r.Header.Get("X-Amz-Target") {
				case "AmazonSQS.GetQueueUrl":
					fmt.Fprintf(w, `{"QueueUrl":%q}`, srv.URL+"/000000000000/jobs")
				case "AmazonSQS.ReceiveMessage":
					io.WriteString(w, `{"Messages":[{"MessageId":"m-1","ReceiptHandle":"rh-1","Body":"hello","MD5OfBody":"5d41402abc4b2a76b9719d911017c592"}]}`)
				case "AmazonSQS.DeleteMessageBatch":
					w.WriteHeader(tc.status)
					io.WriteString(w, tc.answer)
				default:
					http.Error(w, "not this", http.StatusBadRequest)
				}
			}))
			t.Cleanup(srv.Close)
			r := runCLI(t, cliEnv(t, "BATON_ENDPOINT="+srv.URL), nil, "receive", "jobs", "--delete")
			if r.code != 1 || !strings.Contains(r.stdout, "MessageId: m-1") || !strings.HasSuffix(r.stderr, tc.want) {
				t.Errorf("receive jobs --delete, the delete failing: %v\nwant exit 1, the message printed and standard error ending %q", r, tc.want)
			}
		})
	}
}
