package cli_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/internal/cli"
)

// baton proxy forwards to an upstream with the credentials of the standard
// chain (here the environment's), whatever its clients sign with.
func TestProxyCommand(t *testing.T) {
	up := batontest.New(t, batontest.WithCredentials("AKIDPROXYCLI", "proxy-cli-secret"))
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDPROXYCLI")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "proxy-cli-secret")
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- cli.RunProxy(ctx, cli.ProxyConfig{
			Listen: "127.0.0.1:0", Upstream: up.URL(), Region: batontest.Region, LogLevel: "info", Logs: io.Discard,
		}, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("baton proxy: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("baton proxy did not start")
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("baton proxy: %v", err)
		}
	}()
	c := sqs.New(sqs.Options{BaseEndpoint: aws.String("http://" + addr), Region: batontest.Region, RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDANYONE", "whatever", "")})
	if _, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("through")}); err != nil {
		t.Fatalf("CreateQueue through baton proxy: %v", err)
	}
	if _, err := up.Client().GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("through")}); err != nil {
		t.Fatalf("the queue is not upstream: %v", err)
	}
}

// baton proxy refuses what it cannot do safely or at all.
func TestProxyCommandRefuses(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy"}, "--upstream is required"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1"}, "give --region"},
		{[]string{"proxy", "--upstream", "ftp://sqs.us-east-1.amazonaws.com"}, "want an http:// or https:// URL"},
		{[]string{"proxy", "--upstream", "https://sqs.us-east-1.amazonaws.com", "--listen", "0.0.0.0:9325"}, "not a loopback address"},
	} {
		var stdout, stderr bytes.Buffer
		code := cli.Main{Stdout: &stdout, Stderr: &stderr}.Run(context.Background(), tt.args)
		if code != 1 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("baton %s: exit %d, %s; want exit 1 and %q", strings.Join(tt.args, " "), code, stderr.String(), tt.want)
		}
	}
}
