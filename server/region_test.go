package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/sdkhttp"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/baton-sqs/baton/server"
)

// inRegion is c signing for region instead.
func inRegion(c *sqs.Client, region string) *sqs.Client {
	return sqs.New(c.Options(), func(o *sqs.Options) { o.Region = region })
}

func queueARN(t *testing.T, c *sqs.Client, queueURL string) string {
	t.Helper()
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		t.Fatalf("get QueueArn of %s: %v", queueURL, err)
	}
	return out.Attributes["QueueArn"]
}

func listQueues(t *testing.T, c *sqs.Client) []string {
	t.Helper()
	out, err := c.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil {
		t.Fatalf("list queues: %v", err)
	}
	return out.QueueUrls
}

// TestRegionsAreSeparate: two SDK clients signing for two regions see two
// namespaces of one server: one name is two queues, each with its region in
// its ARN, each region lists its own, and a queue of the other region does
// not exist for a client.
func TestRegionsAreSeparate(t *testing.T) { onEveryStore(t, regionsAreSeparate) }

func regionsAreSeparate(t *testing.T, srv *testutil.Server) {
	us, eu := srv.Client, inRegion(srv.Client, "eu-central-1")

	usURL := srv.MustCreateQueue(t, "orders", map[string]string{"VisibilityTimeout": "30"})
	out, err := eu.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders"), Attributes: map[string]string{"VisibilityTimeout": "60"}})
	if err != nil {
		t.Fatalf("create orders in eu-central-1 beside us-east-1's: %v", err)
	}
	euURL := *out.QueueUrl
	if want := srv.URL + "/000000000000/orders"; euURL != want || usURL != want {
		t.Errorf("queue URLs on a plain host: %s and %s, want %s for both", usURL, euURL, want)
	}
	if got := queueARN(t, us, usURL); got != "arn:aws:sqs:us-east-1:000000000000:orders" {
		t.Errorf("us-east-1 QueueArn = %s", got)
	}
	if got := queueARN(t, eu, euURL); got != "arn:aws:sqs:eu-central-1:000000000000:orders" {
		t.Errorf("eu-central-1 QueueArn = %s", got)
	}

	// Messages stay in their region's queue.
	if _, err := eu.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(euURL), MessageBody: aws.String("in eu")}); err != nil {
		t.Fatal(err)
	}
	if got, err := us.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(usURL)}); err != nil || len(got.Messages) != 0 {
		t.Fatalf("receive in us-east-1: %d messages, %v; want none", len(got.Messages), err)
	}
	got, err := eu.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(euURL)})
	if err != nil || len(got.Messages) != 1 || *got.Messages[0].Body != "in eu" {
		t.Fatalf("receive in eu-central-1: %+v, %v; want the message sent there", got, err)
	}
	// A receipt handle of one region's queue does nothing in the other's.
	_, err = us.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(usURL), ReceiptHandle: got.Messages[0].ReceiptHandle})
	wantAPIError(t, err, "ReceiptHandleIsInvalid", 404)

	// Each region lists its own.
	if _, err := eu.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("eu-only")}); err != nil {
		t.Fatal(err)
	}
	if got := listQueues(t, us); len(got) != 1 || got[0] != usURL {
		t.Errorf("us-east-1 lists %v, want only its orders", got)
	}
	if got := listQueues(t, eu); len(got) != 2 || got[0] != srv.URL+"/000000000000/eu-only" {
		t.Errorf("eu-central-1 lists %v, want eu-only and orders", got)
	}
	_, err = us.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("eu-only")})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
	_, err = us.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(srv.URL + "/000000000000/eu-only")})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)

	// Deleting one leaves the other, and its name is refused for a minute
	// in its own region only.
	if _, err := us.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(usURL)}); err != nil {
		t.Fatal(err)
	}
	if got := queueARN(t, eu, euURL); got != "arn:aws:sqs:eu-central-1:000000000000:orders" {
		t.Errorf("eu-central-1 orders after the deletion of us-east-1's: %s", got)
	}
	_, err = us.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	wantAPIError(t, err, "AWS.SimpleQueueService.QueueDeletedRecently", 400)
	if _, err := inRegion(us, "ap-south-1").CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")}); err != nil {
		t.Errorf("create orders in a third region after the deletion in us-east-1: %v", err)
	}
}

// TestRegionDeadLetterQueues: a dead-letter queue must be in its source's
// region (and account); a move task names queues of the caller's region.
func TestRegionDeadLetterQueues(t *testing.T) { onEveryStore(t, regionDeadLetterQueues) }

func regionDeadLetterQueues(t *testing.T, srv *testutil.Server) {
	us, eu := srv.Client, inRegion(srv.Client, "eu-central-1")
	for _, c := range []*sqs.Client{us, eu} {
		if _, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("dlq")}); err != nil {
			t.Fatal(err)
		}
	}
	policy := func(region string) map[string]string {
		return map[string]string{
			"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":"arn:aws:sqs:%s:000000000000:dlq","maxReceiveCount":"1"}`, region),
			"VisibilityTimeout": "0",
		}
	}
	_, err := us.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("work"), Attributes: policy("eu-central-1")})
	wantAPIError(t, err, "InvalidParameterValue", 400)
	out, err := eu.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("work"), Attributes: policy("eu-central-1")})
	if err != nil {
		t.Fatalf("create work with a dead-letter queue of its region: %v", err)
	}
	work := out.QueueUrl
	_, err = eu.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: work, Attributes: policy("us-east-1")})
	wantAPIError(t, err, "InvalidParameterValue", 400)

	// Past maxReceiveCount the message goes to eu-central-1's dlq.
	if _, err := eu.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: work, MessageBody: aws.String("poison")}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := eu.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: work}); err != nil {
			t.Fatal(err)
		}
	}
	dlqURL := aws.String(srv.URL + "/000000000000/dlq")
	got, err := eu.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: dlqURL, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"DeadLetterQueueSourceArn"}})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("receive eu-central-1 dlq: %+v, %v; want the dead-lettered message", got, err)
	}
	if src := got.Messages[0].Attributes["DeadLetterQueueSourceArn"]; src != "arn:aws:sqs:eu-central-1:000000000000:work" {
		t.Errorf("DeadLetterQueueSourceArn = %s", src)
	}
	if got, err := us.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: dlqURL}); err != nil || len(got.Messages) != 0 {
		t.Errorf("receive us-east-1 dlq: %d messages, %v; want none", len(got.Messages), err)
	}
	srcs, err := us.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: dlqURL})
	if err != nil || len(srcs.QueueUrls) != 0 {
		t.Errorf("us-east-1 dlq sources: %v, %v; want none", srcs, err)
	}

	// Move tasks: the source must be of the caller's region.
	euDLQ := "arn:aws:sqs:eu-central-1:000000000000:dlq"
	_, err = us.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(euDLQ)})
	wantAPIError(t, err, "ResourceNotFoundException", 404)
	_, err = us.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(euDLQ)})
	wantAPIError(t, err, "ResourceNotFoundException", 404)
	_, err = eu.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{
		SourceArn: aws.String(euDLQ), DestinationArn: aws.String("arn:aws:sqs:us-east-1:000000000000:dlq"),
	})
	wantAPIError(t, err, "ResourceNotFoundException", 404)
	start, err := eu.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(euDLQ)})
	if err != nil {
		t.Fatalf("start a move task in eu-central-1: %v", err)
	}
	_, err = us.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: start.TaskHandle})
	wantAPIError(t, err, "ResourceNotFoundException", 404)
}

// hostClient is an HTTP client that sends every request to addr whatever
// host its URL names, so that tests can use names like
// sqs.eu-central-1.localhost.
func hostClient(addr string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
}

// TestRegionFromHost: a request that is not signed acts in the region its
// host names, sqs.<region>.… or <region>.queue.…, else the default region;
// a signed one in its credential scope's, whatever the host. The queue URLs
// answered carry the host, and with it the region.
func TestRegionFromHost(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	u, _ := url.Parse(srv.URL)
	_, port, _ := net.SplitHostPort(u.Host)
	hc := hostClient(u.Host)

	create := func(host, name string, sign string) (int, string) {
		t.Helper()
		form := url.Values{"Action": {"CreateQueue"}, "QueueName": {name}, "Version": {"2012-11-05"}}
		req, err := http.NewRequest(http.MethodPost, "http://"+host+"/", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if sign != "" {
			sum := sha256.Sum256([]byte(form.Encode()))
			creds := aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret"}
			if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "sqs", sign, srv.Clock.Now()); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		host, name, sign, region, wantURL string
	}{
		{"sqs.eu-central-1.localhost:" + port, "a", "", "eu-central-1", "http://sqs.eu-central-1.localhost:" + port + "/000000000000/a"},
		{"eu-west-2.queue.localhost:" + port, "b", "", "eu-west-2", "http://eu-west-2.queue.localhost:" + port + "/000000000000/b"},
		{u.Host, "c", "", "us-east-1", srv.URL + "/000000000000/c"},
		{"localhost:" + port, "d", "", "us-east-1", "http://localhost:" + port + "/000000000000/d"},
		// The signature's scope wins over the host.
		{"sqs.eu-central-1.localhost:" + port, "e", "ap-south-1", "ap-south-1", "http://sqs.eu-central-1.localhost:" + port + "/000000000000/e"},
	} {
		status, body := create(c.host, c.name, c.sign)
		if status != 200 || !strings.Contains(body, "<QueueUrl>"+c.wantURL+"</QueueUrl>") {
			t.Errorf("CreateQueue %s at %s: %d %s; want QueueUrl %s", c.name, c.host, status, body, c.wantURL)
			continue
		}
		if got := queueARN(t, inRegion(srv.Client, c.region), c.name); got != "arn:aws:sqs:"+c.region+":000000000000:"+c.name {
			t.Errorf("queue %s: QueueArn %s, want it in %s", c.name, got, c.region)
		}
	}

	// An SDK client with a regional endpoint gets queue URLs of it.
	eu := sqs.New(sqs.Options{
		BaseEndpoint: aws.String("http://sqs.eu-central-1.localhost:" + port), Region: "eu-central-1",
		Credentials: srv.Client.Options().Credentials, HTTPClient: sdkhttp.Client(hc), RetryMaxAttempts: 1,
	})
	got, err := eu.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("a")})
	if err != nil || *got.QueueUrl != "http://sqs.eu-central-1.localhost:"+port+"/000000000000/a" {
		t.Errorf("GetQueueUrl a at sqs.eu-central-1.localhost: %v, %v", got, err)
	}

	// A scope that names no region is refused as AWS refuses it.
	status, body := create(u.Host, "f", "Not A Region")
	if status != 403 || !strings.Contains(body, "SignatureDoesNotMatch") {
		t.Errorf("scope region %q: %d %s; want 403 SignatureDoesNotMatch", "Not A Region", status, body)
	}
}

// TestRegionSigned: with authentication on, the region is the verified
// scope's.
func TestRegionSigned(t *testing.T) {
	t.Parallel()
	cred := sigv4.Credential{AccessKeyID: "AKIDREGION", SecretAccessKey: "region-secret", Account: "123456789012"}
	srv := testutil.StartServer(t, testutil.Options{Credentials: []sigv4.Credential{cred}})
	eu := inRegion(srv.Client, "eu-central-1")
	out, err := eu.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("signed")})
	if err != nil {
		t.Fatal(err)
	}
	if got := queueARN(t, eu, *out.QueueUrl); got != "arn:aws:sqs:eu-central-1:123456789012:signed" {
		t.Errorf("QueueArn = %s", got)
	}
	_, err = srv.Client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("signed")})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
}

// TestQueryRegions: the Query protocol acts in the region of the request's
// signature too, on the queue URL's path.
func TestQueryRegions(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	eu := inRegion(c.srv.Client, "eu-central-1")
	out, err := eu.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q-eu")})
	if err != nil {
		t.Fatal(err)
	}
	// The Query client signs for us-east-1: the queue is not there.
	c.post(queryQueuePath("q-eu"), "Action", "GetQueueAttributes", "AttributeName.1", "All").
		fail(t, 400, "AWS.SimpleQueueService.NonExistentQueue")
	c.post("/", "Action", "GetQueueUrl", "QueueName", "q-eu").fail(t, 400, "AWS.SimpleQueueService.NonExistentQueue")
	if got := c.post("/", "Action", "ListQueues"); got.status != 200 || strings.Contains(string(got.body), "q-eu") {
		t.Errorf("us-east-1 ListQueues: %v; want q-eu left out", got)
	}
	c.createQueue("q-eu") // a queue of its own, in us-east-1
	if got := queueARN(t, c.srv.Client, c.queueURL("q-eu")); got != "arn:aws:sqs:us-east-1:000000000000:q-eu" {
		t.Errorf("us-east-1 q-eu QueueArn = %s", got)
	}
	if got := queueARN(t, eu, *out.QueueUrl); got != "arn:aws:sqs:eu-central-1:000000000000:q-eu" {
		t.Errorf("eu-central-1 q-eu QueueArn = %s", got)
	}
}

// TestRegionAdminAndMetrics: the admin API acts in the region its region
// parameter names, else the default one; /metrics labels each queue with
// its region, so that queues of one name in two regions are two series.
func TestRegionAdminAndMetrics(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	eu := inRegion(srv.Client, "eu-central-1")
	srv.MustCreateQueue(t, "orders", nil)
	if _, err := eu.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders"), Attributes: map[string]string{"VisibilityTimeout": "60"}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ query, region string }{{"", "us-east-1"}, {"?region=eu-central-1", "eu-central-1"}} {
		var list server.QueueListJSON
		getJSON(t, srv.URL+"/admin/api/queues"+c.query, &list)
		if len(list.Queues) != 1 || list.Queues[0].Region != c.region || list.Queues[0].ARN != "arn:aws:sqs:"+c.region+":000000000000:orders" {
			t.Errorf("admin queues%s: %+v; want %s's orders", c.query, list.Queues, c.region)
		}
		var rep server.LeaseReportJSON
		getJSON(t, srv.URL+"/admin/api/queues/orders/leases"+c.query, &rep)
		if want := map[string]int{"us-east-1": 30, "eu-central-1": 60}[c.region]; rep.VisibilityTimeoutSeconds != want {
			t.Errorf("admin leases%s: visibility timeout %d, want %d", c.query, rep.VisibilityTimeoutSeconds, want)
		}
	}
	// A signed admin request (baton doctor's) acts in its scope's region.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/admin/api/queues/orders/leases", nil)
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDTEST/20260102/eu-central-1/sqs/aws4_request, SignedHeaders=host, Signature=00")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `"visibility_timeout_seconds": 60`) {
			t.Errorf("signed admin leases for eu-central-1: %d %s; want eu-central-1's orders", resp.StatusCode, b)
		}
	}

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, region := range []string{"us-east-1", "eu-central-1"} {
		if want := `baton_queue_messages{account="000000000000",queue="orders",region="` + region + `",state="visible"} 0`; resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("/metrics: %d, no line %s in\n%s", resp.StatusCode, want, b)
		}
	}
}
