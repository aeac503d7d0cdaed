package cli_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/cli"
	"github.com/baton-sqs/baton/internal/sdkhttp"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
)

// serve runs cli.Serve until the test ends and returns its address; its
// log goes to cfg.Logs if that is a *logbuf.Buffer.
func serve(t *testing.T, cfg cli.ServeConfig) string {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Store == "" {
		cfg.Store = "memory"
	}
	if cfg.Durability == "" {
		cfg.Durability = "full"
	}
	cfg.LogLevel, cfg.DataDir = "info", t.TempDir()
	if cfg.AccountID == "" {
		cfg.AccountID = "000000000000"
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	logs, ok := cfg.Logs.(*logbuf.Buffer) // a test's own, to read
	if !ok {
		logs = &logbuf.Buffer{}
	}
	cfg.Logs = logs
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- cli.Serve(ctx, cfg, ready) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	select {
	case addr := <-ready:
		return addr
	case err := <-done:
		t.Fatalf("Serve returned before serving: %v\n%s", err, logs.String())
	}
	return ""
}

// client is an SDK client for endpoint with the given key, signing with the
// wall clock as real clients do.
func client(endpoint, keyID, secret string, hc *http.Client) *sqs.Client {
	o := sqs.Options{
		BaseEndpoint:     aws.String(endpoint),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider(keyID, secret, ""),
		RetryMaxAttempts: 1,
		HTTPClient:       sdkhttp.Client(nil),
	}
	if hc != nil {
		o.HTTPClient = sdkhttp.Client(hc)
	}
	return sqs.New(o)
}

// serveSigned starts a server that checks signatures, with one key acting
// for account, and returns its URL and a client signing with that key.
func serveSigned(t *testing.T, keyID, secret, account string) (string, *sqs.Client) {
	t.Helper()
	url := "http://" + serve(t, cli.ServeConfig{AccessKeyID: keyID, SecretAccessKey: secret, AccountID: account})
	return url, client(url, keyID, secret, http.DefaultClient)
}

// jobsHolding creates the queue "jobs" through c, sends it one message of
// body, and returns its URL.
func jobsHolding(t *testing.T, c *sqs.Client, body string) string {
	t.Helper()
	q, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("jobs")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	return *q.QueueUrl
}

func wantCode(t *testing.T, err error, code string, status int) {
	t.Helper()
	var ae smithy.APIError
	var re *awshttp.ResponseError
	if !errors.As(err, &ae) || !errors.As(err, &re) || ae.ErrorCode() != code || re.HTTPStatusCode() != status {
		t.Errorf("got %v, want %s (%d)", err, code, status)
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const credentialsFile = `# Baton credentials: access-key-id secret-access-key account-id

AKIDALICE	alice/Secret+1   111111111111
  # indented comment
AKIDBOB bob-secret 222222222222
`

func TestServeCredentialsFile(t *testing.T) {
	t.Parallel()
	addr := serve(t, cli.ServeConfig{CredentialsFile: writeFile(t, "credentials", credentialsFile)})
	url := "http://" + addr
	ctx := context.Background()
	alice := client(url, "AKIDALICE", "alice/Secret+1", nil)
	bob := client(url, "AKIDBOB", "bob-secret", nil)

	out, err := alice.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs")})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	if want := url + "/111111111111/jobs"; *out.QueueUrl != want {
		t.Errorf("queue URL = %s, want %s", *out.QueueUrl, want)
	}
	list, err := bob.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil || len(list.QueueUrls) != 0 {
		t.Errorf("bob's ListQueues = %+v, %v; want none", list, err)
	}
	_, err = bob.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: aws.String("x")})
	wantCode(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
	_, err = client(url, "AKIDALICE", "wrong", nil).ListQueues(ctx, &sqs.ListQueuesInput{})
	wantCode(t, err, "SignatureDoesNotMatch", 403)
	_, err = client(url, "AKIDEVE", "x", nil).ListQueues(ctx, &sqs.ListQueuesInput{})
	wantCode(t, err, "InvalidClientTokenId", 403)

	resp, err := http.Post(url+"/", "application/x-www-form-urlencoded", strings.NewReader("Action=ListQueues"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(b), "<Code>MissingAuthenticationToken</Code>") {
		t.Errorf("unsigned request: %d %s, want 403 MissingAuthenticationToken", resp.StatusCode, b)
	}
}

// TestServeRefuses checks configurations Serve must refuse before it
// listens on anything.
func TestServeRefuses(t *testing.T) {
	t.Parallel()
	cert, key := selfSigned(t)
	for _, tc := range []struct {
		name string
		cfg  cli.ServeConfig
		want string
	}{
		{"every interface without credentials", cli.ServeConfig{Listen: "0.0.0.0:0"},
			"refusing to serve 0.0.0.0:0 without credentials"},
		{"no host without credentials", cli.ServeConfig{Listen: ":0"}, "refusing to serve :0 without credentials"},
		{"key without secret", cli.ServeConfig{AccessKeyID: "AKID"}, "--access-key-id needs --secret-access-key"},
		{"secret without key", cli.ServeConfig{SecretAccessKey: "s"}, "--secret-access-key needs --access-key-id"},
		{"bad flag key", cli.ServeConfig{AccessKeyID: "AK/ID", SecretAccessKey: "s"}, "--access-key-id: the access key id \"AK/ID\" has the character '/'"},
		{"missing file", cli.ServeConfig{CredentialsFile: "/nonexistent/credentials"}, "--credentials-file: open /nonexistent/credentials"},
		{"two fields", cli.ServeConfig{CredentialsFile: writeFile(t, "c", "# keys\nAKIDA secret 111111111111\nAKIDB secret\n")},
			"/c:3: want 3 fields (access-key-id secret-access-key account-id), got 2"},
		{"short account", cli.ServeConfig{CredentialsFile: writeFile(t, "c", "AKIDA secret 1234\n")},
			"/c:1: the account id \"1234\" of AKIDA is not 12 digits"},
		{"duplicate key", cli.ServeConfig{CredentialsFile: writeFile(t, "c", "AKIDA s1 111111111111\n\nAKIDA s2 222222222222\n")},
			"/c:3: the access key id AKIDA is already listed on line 1"},
		{"key in flag and file", cli.ServeConfig{AccessKeyID: "AKIDA", SecretAccessKey: "s", CredentialsFile: writeFile(t, "c", "AKIDA s1 111111111111\n")},
			"the access key id AKIDA is also given by --access-key-id"},
		{"empty file", cli.ServeConfig{CredentialsFile: writeFile(t, "c", "# nobody yet\n")}, "/c: no credentials in the file"},
		{"cert without key", cli.ServeConfig{TLSCert: cert}, "--tls-cert and --tls-key go together"},
		{"key without cert", cli.ServeConfig{TLSKey: key}, "--tls-cert and --tls-key go together"},
		{"cert and key swapped", cli.ServeConfig{TLSCert: key, TLSKey: cert}, "--tls-cert/--tls-key:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			if cfg.Listen == "" {
				cfg.Listen = "127.0.0.1:0"
			}
			cfg.Store, cfg.LogLevel, cfg.AccountID, cfg.Logs = "memory", "info", "000000000000", io.Discard
			ready := make(chan string, 1)
			err := cli.Serve(context.Background(), cfg, ready)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Serve: %v, want an error containing %q", err, tc.want)
			}
			select {
			case addr := <-ready:
				t.Errorf("Serve listened on %s before refusing", addr)
			default:
			}
		})
	}
}

// selfSigned writes a fresh self-signed certificate for 127.0.0.1 and its
// key as PEM files.
func selfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := clock.System{}.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "baton test"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = writeFile(t, "cert.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	keyFile = writeFile(t, "key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	return certFile, keyFile
}

// TestServeTLS serves HTTPS with a generated self-signed certificate and a
// key given by flag, and drives it with the SDK trusting that certificate.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	certFile, keyFile := selfSigned(t)
	addr := serve(t, cli.ServeConfig{TLSCert: certFile, TLSKey: keyFile,
		AccessKeyID: "AKIDTLS", SecretAccessKey: "tls-secret", AccountID: "333333333333"})
	pemBytes, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := "https://" + addr

	resp, err := hc.Get(url + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz over TLS: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil {
		t.Errorf("GET /healthz: %d, TLS %v; want 200 over TLS", resp.StatusCode, resp.TLS != nil)
	}
	out, err := client(url, "AKIDTLS", "tls-secret", hc).CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("secure")})
	if err != nil {
		t.Fatalf("CreateQueue over TLS: %v", err)
	}
	if want := url + "/333333333333/secure"; *out.QueueUrl != want {
		t.Errorf("queue URL = %s, want %s", *out.QueueUrl, want)
	}
	// baton doctor reaches the TLS server as the other commands do: through
	// the SDK's HTTP client, which AWS_CA_BUNDLE configures (it used
	// net/http's default client and failed to verify the certificate).
	env := cliEnv(t, "AWS_CA_BUNDLE="+certFile, "AWS_ACCESS_KEY_ID=AKIDTLS", "AWS_SECRET_ACCESS_KEY=tls-secret")
	if r := runCLI(t, env, nil, "doctor", "--endpoint", url, "--json"); r.code != 0 || !strings.Contains(r.stdout, `"secure"`) {
		t.Errorf("baton doctor over TLS: %v", r)
	}
	// Plain HTTP to the TLS port is not served.
	plain, err := http.Get("http://" + addr + "/healthz")
	if err == nil {
		plain.Body.Close()
		if plain.StatusCode == 200 {
			t.Errorf("plain HTTP to the TLS port answered 200")
		}
	}
}

// TestServeEnvCredentials runs `baton serve` with the key in
// BATON_ACCESS_KEY_ID and BATON_SECRET_ACCESS_KEY. Not parallel: it sets
// environment variables.
func TestServeEnvCredentials(t *testing.T) {
	t.Setenv("BATON_ACCESS_KEY_ID", "AKIDENV")
	t.Setenv("BATON_SECRET_ACCESS_KEY", "env-secret")
	var logs logbuf.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- cli.Main{Stdout: io.Discard, Stderr: &logs}.Run(ctx,
			[]string{"serve", "--listen", "127.0.0.1:0", "--account-id", "444444444444", "--data-dir", t.TempDir()})
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("baton serve exited %d:\n%s", code, logs.String())
		}
	}()
	re := regexp.MustCompile(`baton serving"? addr=(127\.0\.0\.1:[0-9]+)`)
	var addr string
	testutil.CheckFor(t, 10*time.Second, func() error {
		m := re.FindStringSubmatch(logs.String())
		if m == nil {
			return fmt.Errorf("no serving line in %q", logs.String())
		}
		addr = m[1]
		return nil
	})
	if !strings.Contains(logs.String(), `auth="sigv4 (1 keys)"`) {
		t.Errorf("serving line does not report the key: %s", logs.String())
	}
	url := "http://" + addr
	out, err := client(url, "AKIDENV", "env-secret", nil).CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("env")})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	if want := url + "/444444444444/env"; *out.QueueUrl != want {
		t.Errorf("queue URL = %s, want %s", *out.QueueUrl, want)
	}
	_, err = client(url, "AKIDENV", "not-it", nil).ListQueues(context.Background(), &sqs.ListQueuesInput{})
	wantCode(t, err, "SignatureDoesNotMatch", 403)
}

// A client that sends its headers and then trickles (or stops sending) its
// body is cut off at BodyReadTimeout; a long poll, whose wait comes after
// the body, is not.
func TestServeBodyReadTimeout(t *testing.T) {
	t.Parallel()
	addr := serve(t, cli.ServeConfig{BodyReadTimeout: 300 * time.Millisecond})
	ctx := t.Context()
	c := client("http://"+addr, "AKID", "SECRET", nil)
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("slow")})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatalf("a 1 s long poll with a 300 ms body timeout: %v", err)
	}
	if len(out.Messages) != 0 || time.Since(start) < time.Second {
		t.Errorf("long poll answered %d messages after %v, want none after its whole 1 s wait", len(out.Messages), time.Since(start))
	}

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"QueueUrl":"` + *q.QueueUrl + `","MessageBody":"never finished"}`
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-amz-json-1.0\r\n"+
		"X-Amz-Target: AmazonSQS.SendMessage\r\nContent-Length: %d\r\n\r\n%s", addr, len(body)+100, body)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	reply, err := io.ReadAll(conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the server still held the connection after 10 s with a 300 ms body timeout")
	}
	if bytes.Contains(reply, []byte("200 OK")) {
		t.Errorf("an unfinished body was answered 200:\n%s", reply)
	}
	n, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Attributes["ApproximateNumberOfMessages"]; got != "0" {
		t.Errorf("messages after the unfinished send: %s, want 0", got)
	}
}

// Without credentials on a loopback address, serve answers only requests
// that name it by an IP address or localhost: a web page whose own name is
// pointed at 127.0.0.1 (DNS rebinding) gets nothing.
func TestServeLocalHostsOnly(t *testing.T) {
	t.Parallel()
	addr := serve(t, cli.ServeConfig{})
	_, port, _ := net.SplitHostPort(addr)
	for host, want := range map[string]int{addr: http.StatusOK, "localhost:" + port: http.StatusOK, "rebind.evil.example:" + port: http.StatusForbidden} {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/", strings.NewReader("Action=ListQueues"))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}

// The start-up log says where everything is: the SQS endpoint and the
// dashboard as URLs, the store and its data directory as an absolute path
// (given relative here), and each declared queue as created or existing.
func TestServeStartupLog(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, data)
	if err != nil {
		t.Fatal(err)
	}
	path := writeConfig(t, "queues:\n  - name: jobs\n")
	p := startServe(t, cliEnv(t), "--store", "sqlite", "--data-dir", rel, "--config", path)
	logs := p.logs.String()
	for _, want := range []string{
		`msg="config queue created" queue=jobs`,
		"endpoint=" + p.URL + " dashboard=" + p.URL + "/ ",
		"store=sqlite data_dir=" + data + " ",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("start-up log: want %q in\n%s", want, logs)
		}
	}
}

// --advertise-url (a config file's advertise-url, BATON_ADVERTISE_URL) is
// the base of the queue URLs the server hands out; a value that is not a
// host's URL is refused.
func TestServeAdvertiseURL(t *testing.T) {
	t.Parallel()
	const base = "http://baton.internal:9324"
	path := writeConfig(t, "advertise-url: "+base+"\n")
	for name, tt := range map[string]struct {
		env  []string
		args []string
	}{
		"flag":     {nil, []string{"--advertise-url", base + "/"}},
		"file":     {nil, []string{"--config", path}},
		"env":      {[]string{"BATON_ADVERTISE_URL=" + base}, nil},
		"env>file": {[]string{"BATON_ADVERTISE_URL=" + base}, []string{"--config", writeConfig(t, "advertise-url: http://other:1\n")}},
	} {
		p := startServe(t, cliEnv(t, tt.env...), append([]string{"--store", "memory"}, tt.args...)...)
		if got := mustSucceed(t, p.URL, "queue", "create", "jobs"); got != base+"/000000000000/jobs\n" {
			t.Errorf("%s: queue create: %q, want the URL on %s", name, got, base)
		}
		if !strings.Contains(p.logs.String(), "advertise_url="+base) {
			t.Errorf("%s: want the advertised URL in the start-up log:\n%s", name, p.logs)
		}
	}
	bad := writeConfig(t, "store: memory\nadvertise-url: baton:9324\n")
	for _, args := range [][]string{
		{"--advertise-url", "http://baton:9324/prefix"},
		{"--config", bad},
	} {
		r := runCLI(t, cliEnv(t), nil, append([]string{"serve", "--listen", "127.0.0.1:0", "--store", "memory"}, args...)...)
		if r.code != 1 || !strings.Contains(r.stderr, "is not a URL of a host alone") {
			t.Errorf("serve %v: %v\nwant it refused", args, r)
		}
	}
	if r := runCLI(t, cliEnv(t), nil, "serve", "--store", "memory", "--config", bad); !strings.Contains(r.stderr, bad+":2: advertise-url:") {
		t.Errorf("a bad advertise-url in a file: %v\nwant its file:line", r)
	}
}

// --trust-proxy takes addresses and CIDR prefixes; anything else stops
// serve before it listens, naming the flag.
func TestServeTrustProxyChecked(t *testing.T) {
	t.Parallel()
	r := runCLI(t, cliEnv(t), nil, "serve", "--store", "memory", "--listen", "127.0.0.1:0", "--trust-proxy", "10.0.0.0/8,proxy.example")
	if r.code == 0 || !strings.Contains(r.stderr, `--trust-proxy: "proxy.example" is neither an IP address nor a CIDR prefix`) {
		t.Errorf("serve --trust-proxy with a host name: %v; want refused, naming the flag", r)
	}
}

// A port another process holds gets a hint, not only the bind error.
func TestServePortInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var stdout, stderr bytes.Buffer
	code := cli.Main{Stdout: &stdout, Stderr: &stderr}.Run(context.Background(), []string{
		"serve", "--store", "memory", "--listen", ln.Addr().String()})
	if code == 0 || !strings.Contains(stderr.String(), "another process (another Baton?) listens there") {
		t.Errorf("exit %d, stderr %q; want a non-zero exit and the hint", code, stderr.String())
	}
}

// The embedded store's settings given to a server of another store do
// nothing; the server says so at start rather than let an operator believe
// it backs up or commits as asked. The embedded store's server says
// nothing of them.
func TestServeWarnsOfIgnoredStoreFlags(t *testing.T) {
	t.Parallel()
	memLogs := &logbuf.Buffer{}
	serve(t, cli.ServeConfig{Store: "memory", BackupDir: t.TempDir(), Durability: "relaxed", Logs: memLogs})
	for _, want := range []string{"--backup-dir is ignored", "--durability is ignored"} {
		if !strings.Contains(memLogs.String(), want) {
			t.Errorf("--store memory --backup-dir … --durability relaxed: no %q in the log:\n%s", want, memLogs)
		}
	}
	embLogs := &logbuf.Buffer{}
	serve(t, cli.ServeConfig{Store: "embedded", BackupDir: t.TempDir(), Durability: "relaxed", Logs: embLogs})
	if strings.Contains(embLogs.String(), "is ignored") {
		t.Errorf("--store embedded: a setting said to be ignored:\n%s", embLogs)
	}
}
