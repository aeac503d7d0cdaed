package e2e_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/testutil"
)

// The key clientEnv gives the external clients, and a second key of another
// account.
const (
	e2eKeyID, e2eSecret, e2eAccount = "AKIDBATONE2E", "baton-e2e-secret", "123456789012"
	otherKeyID, otherSecret         = "AKIDE2EOTHER", "other/secret+key"
	otherAccount                    = "210987654321"
)

// startBatonArgs starts the binary on 127.0.0.1:0 with extra serve flags,
// like startBaton, and waits until /healthz answers.
func startBatonArgs(t testing.TB, args ...string) *batonProcess {
	t.Helper()
	return startBatonWithin(t, 15*time.Second, args...)
}

// startBatonWithin is startBatonArgs for a server that may take up to
// serving to start, such as one rebuilding the index of a large backlog.
func startBatonWithin(t testing.TB, serving time.Duration, args ...string) *batonProcess {
	t.Helper()
	p := startBatonServing(t, serving, args...)
	hc := &http.Client{Timeout: time.Second}
	testutil.CheckFor(t, 15*time.Second, func() error {
		resp, err := hc.Get(p.URL + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /healthz: status %d", resp.StatusCode)
		}
		return nil
	})
	return p
}

// startBatonServing starts the built server and returns once it logs that
// it serves, whatever its /healthz says.
func startBatonServing(t testing.TB, serving time.Duration, args ...string) *batonProcess {
	t.Helper()
	logs := &serverLog{addr: make(chan string, 1)}
	cmd := exec.Command(batonBin, append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()}, args...)...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "BATON_") })
	cmd.Stdout, cmd.Stderr = logs, logs
	// Killed with the test binary too: one that ends without its cleanups
	// (go test's -timeout panics) left its servers running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start baton: %v", err)
	}
	p := &batonProcess{cmd: cmd, logs: logs, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			cmd.Process.Kill()
			select {
			case <-p.exited:
			case <-time.After(10 * time.Second):
				t.Errorf("baton (pid %d) did not exit 10s after SIGKILL", cmd.Process.Pid)
			}
		}
		if t.Failed() {
			t.Logf("baton output:\n%s", logs)
		}
	})
	select {
	case addr := <-logs.addr:
		p.URL = "http://" + addr
	case <-p.exited:
		t.Fatalf("baton exited before serving: %v\n%s", p.waitErr, logs)
	case <-time.After(serving):
		t.Fatalf("no \"baton serving addr=\" line after %v; output:\n%s", serving, logs)
	}
	return p
}

// wantError runs a command that must fail with code in its error output.
func (c *awsCLI) wantError(code string, args ...string) {
	c.t.Helper()
	_, stderr, exit := c.run(args...)
	if exit == 0 || !strings.Contains(stderr, "("+code+")") {
		c.t.Errorf("aws sqs %s: exit %d, stderr %q; want a failure with (%s)", strings.Join(args, " "), exit, stderr, code)
	}
}

// TestAWSCLISigned runs the AWS CLI, which signs with SigV4, against a
// server that checks signatures, with keys of two accounts from a
// credentials file.
func TestAWSCLISigned(t *testing.T) {
	t.Parallel()
	needClient(t, "the AWS CLI (aws)", "aws", "--version")
	creds := filepath.Join(t.TempDir(), "credentials")
	content := fmt.Sprintf("# e2e keys\n%s %s %s\n%s %s %s\n", e2eKeyID, e2eSecret, e2eAccount, otherKeyID, otherSecret, otherAccount)
	if err := os.WriteFile(creds, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startBatonArgs(t, "--credentials-file", creds)
	cli := newAWSCLI(t, srv.URL)

	var created struct{ QueueUrl string }
	cli.must(&created, "create-queue", "--queue-name", "signed")
	if want := srv.URL + "/" + e2eAccount + "/signed"; created.QueueUrl != want {
		t.Fatalf("QueueUrl = %s, want %s", created.QueueUrl, want)
	}
	var sent struct{ MessageId, MD5OfMessageBody string }
	cli.must(&sent, "send-message", "--queue-url", created.QueueUrl, "--message-body", "signed body ✓")
	if sent.MD5OfMessageBody != md5Hex("signed body ✓") {
		t.Errorf("MD5OfMessageBody = %s, want %s", sent.MD5OfMessageBody, md5Hex("signed body ✓"))
	}
	msgs := cli.receive(created.QueueUrl, 1)
	if msgs[0].Body != "signed body ✓" {
		t.Errorf("received %q", msgs[0].Body)
	}
	cli.must(nil, "delete-message", "--queue-url", created.QueueUrl, "--receipt-handle", msgs[0].ReceiptHandle)

	// The other account's key sees none of it.
	other := newAWSCLI(t, srv.URL)
	other.env = append(other.env, "AWS_ACCESS_KEY_ID="+otherKeyID, "AWS_SECRET_ACCESS_KEY="+otherSecret)
	var listed struct{ QueueUrls []string }
	other.must(&listed, "list-queues")
	if len(listed.QueueUrls) != 0 {
		t.Errorf("other account lists %v, want nothing", listed.QueueUrls)
	}
	other.wantError("AWS.SimpleQueueService.NonExistentQueue", "send-message", "--queue-url", created.QueueUrl, "--message-body", "x")

	wrong := newAWSCLI(t, srv.URL)
	wrong.env = append(wrong.env, "AWS_SECRET_ACCESS_KEY=not-the-secret")
	wrong.wantError("SignatureDoesNotMatch", "list-queues")

	unknown := newAWSCLI(t, srv.URL)
	unknown.env = append(unknown.env, "AWS_ACCESS_KEY_ID=AKIDNOBODY")
	unknown.wantError("InvalidClientTokenId", "list-queues")

	cli.wantError("MissingAuthenticationToken", "list-queues", "--no-sign-request")
}

// TestRefusesAnonymousNetwork checks that the binary will not serve every
// interface without credentials, and says why.
func TestRefusesAnonymousNetwork(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(batonBin, "serve", "--listen", "0.0.0.0:0", "--data-dir", t.TempDir())
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "BATON_") })
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "refusing to serve 0.0.0.0:0 without credentials") {
		t.Errorf("baton serve --listen 0.0.0.0:0: %v, output %q; want a refusal", err, out)
	}
}
