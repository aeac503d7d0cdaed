package cli_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/internal/cli"
	"github.com/baton-sqs/baton/internal/sdkhttp"
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
		Credentials: credentials.NewStaticCredentialsProvider("AKIDANYONE", "whatever", ""), HTTPClient: sdkhttp.Client(nil)})
	out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("through")})
	if err != nil {
		t.Fatalf("CreateQueue through baton proxy: %v", err)
	}
	if !strings.HasPrefix(*out.QueueUrl, "http://"+addr+"/") {
		t.Errorf("CreateQueue through baton proxy handed out %s, not a queue URL of the proxy", *out.QueueUrl)
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
		{[]string{"proxy", "--upstream", "http://queues.example.com:9324"}, "give --region"},
		{[]string{"proxy", "--upstream", "ftp://sqs.us-east-1.amazonaws.com"}, "want an http:// or https:// URL"},
		{[]string{"proxy", "--upstream", "https://sqs.us-east-1.amazonaws.com", "--listen", "0.0.0.0:9325"}, "not a loopback address"},
		{[]string{"proxy", "--upstream", "https://sqs.us-east-1.amazonaws.com", "--advertise-url", "http://proxy:9325/path"}, "--advertise-url"},
		{[]string{"proxy", "--upstream", "https://sqs.us-east-1.amazonaws.com", "--listen", "9400"}, `--listen: "9400" is not HOST:PORT: did you mean 127.0.0.1:9400?`},
	} {
		var stdout, stderr bytes.Buffer
		code := cli.Main{Stdout: &stdout, Stderr: &stderr}.Run(context.Background(), tt.args)
		if code != 1 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("baton %s: exit %d, %s; want exit 1 and %q", strings.Join(tt.args, " "), code, stderr.String(), tt.want)
		}
	}
	// A port taken gets serve's hint: what to do about it.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var stderr bytes.Buffer
	args := []string{"proxy", "--upstream", "http://127.0.0.1:1", "--listen", taken.Addr().String()}
	if code := (cli.Main{Stdout: io.Discard, Stderr: &stderr}).Run(context.Background(), args); code != 1 ||
		!strings.Contains(stderr.String(), "address already in use: another process (another Baton?) listens there") {
		t.Errorf("baton %s, the port taken: exit %d, %s; want exit 1 and what to do", strings.Join(args, " "), code, stderr.String())
	}
	// The variable that set it is named.
	want := `BATON_PROXY_LISTEN: "9400" is not HOST:PORT: did you mean 127.0.0.1:9400?`
	if r := runCLI(t, cliEnv(t, "BATON_PROXY_LISTEN=9400"), nil, "proxy", "--upstream", "https://sqs.us-east-1.amazonaws.com"); r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("baton proxy with BATON_PROXY_LISTEN=9400: %v\nwant exit 1 and %q", r, want)
	}
}

// In front of an upstream on this machine (a Baton, an emulator), baton
// proxy needs no --region and no AWS credentials, and never asks EC2's
// instance metadata service for them: it signs for us-east-1, a Baton's
// default region, with placeholder credentials a Baton without
// credentials accepts.
func TestProxyLocalUpstream(t *testing.T) {
	up := batontest.New(t)
	var imdsHits atomic.Int32
	imdsServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		imdsHits.Add(1)
		http.Error(w, "not EC2", http.StatusNotFound)
	}))
	defer imdsServer.Close()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_REGION": "",
		"AWS_CONFIG_FILE": dir + "/config", "AWS_SHARED_CREDENTIALS_FILE": dir + "/credentials",
		"AWS_EC2_METADATA_DISABLED": "", "AWS_EC2_METADATA_SERVICE_ENDPOINT": imdsServer.URL,
		"AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "",
	} {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- cli.RunProxy(ctx, cli.ProxyConfig{Listen: "127.0.0.1:0", Upstream: up.URL(), LogLevel: "info", Logs: io.Discard}, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("baton proxy --upstream %s: %v", up.URL(), err)
	case <-time.After(30 * time.Second):
		t.Fatal("baton proxy did not start")
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("baton proxy: %v", err)
		}
	}()
	c := sqs.New(sqs.Options{BaseEndpoint: aws.String("http://" + addr), Region: "us-east-1", RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDANYONE", "whatever", ""), HTTPClient: sdkhttp.Client(nil)})
	if _, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("local")}); err != nil {
		t.Fatalf("CreateQueue through baton proxy: %v", err)
	}
	if _, err := up.Client().GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("local")}); err != nil {
		t.Fatalf("the queue is not upstream in its default region: %v", err)
	}
	if n := imdsHits.Load(); n != 0 {
		t.Errorf("the proxy asked the instance metadata service %d times", n)
	}
}
