package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
)

// On a terminal, a receive that waits says so on standard error once it
// has waited a second; elsewhere it says nothing.
func TestReceiveSaysItWaits(t *testing.T) {
	s := testutil.StartServer(t)
	url := s.MustCreateQueue(t, "jobs", nil)
	t.Setenv("BATON_ENDPOINT", s.URL)
	t.Setenv("AWS_ENDPOINT_URL_SQS", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, terminal := range []bool{true, false} {
		stderrIsTerminal = func(io.Writer) bool { return terminal }
		var stdout, stderr logbuf.Buffer
		done := make(chan int, 1)
		go func() {
			done <- Main{Stdout: &stdout, Stderr: &stderr}.Run(context.Background(), []string{"receive", "jobs", "--wait", "20"})
		}()
		s.WaitForTimers(t, 1) // the long poll waits
		if terminal {
			testutil.CheckFor(t, 30*time.Second, func() error {
				if !strings.Contains(stderr.String(), "waiting for a message on jobs (up to 20s; Ctrl-C to stop)…\n") {
					return fmt.Errorf("stderr %q: no waiting notice", stderr.String())
				}
				return nil
			})
		} else {
			time.Sleep(2 * waitNoticeAfter) // a notice would be written by now
		}
		if _, err := s.Client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")}); err != nil {
			t.Fatal(err)
		}
		if code := <-done; code != 0 || !strings.Contains(stdout.String(), "\n\nx\n") {
			t.Fatalf("receive: exit %d\nstdout %s\nstderr %s", code, stdout.String(), stderr.String())
		}
		if !terminal && stderr.String() != "" {
			t.Errorf("not a terminal: stderr %q, want nothing", stderr.String())
		}
	}
	stderrIsTerminal = isTerminal
}
