package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil"
)

// Issue 31 item 3: a renewal that carries X-Baton-Renewal: progress (as
// Baton's consumer sends it when the handler reported progress) is read in
// both protocols, and the doctor reads the lease held far beyond the p99
// as a long job; the same renewals without it get both readings.
func TestRenewalHeaderBothProtocols(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	progress := func(o *sqs.Options) {
		o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue(baton.RenewalHeader, baton.RenewalProgress))
	}
	// renew renews by protocol: "json" through the SDK, "query" as a form.
	renew := func(t *testing.T, protocol, queueURL, handle string, header bool) {
		t.Helper()
		if protocol == "json" {
			var opts []func(*sqs.Options)
			if header {
				opts = append(opts, progress)
			}
			if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &queueURL, ReceiptHandle: &handle, VisibilityTimeout: 30}, opts...); err != nil {
				t.Fatal(err)
			}
			return
		}
		form := url.Values{"Action": {"ChangeMessageVisibility"}, "QueueUrl": {queueURL}, "ReceiptHandle": {handle}, "VisibilityTimeout": {"30"}}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if header {
			req.Header.Set(baton.RenewalHeader, baton.RenewalProgress)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("query ChangeMessageVisibility: %s", resp.Status)
		}
	}
	for i, protocol := range []string{"json", "query"} {
		for j, header := range []bool{true, false} {
			name := protocol + map[bool]string{true: "-progress", false: "-blind"}[header]
			base := 1000 * (2*i + j)
			qurl := srv.MustCreateQueue(t, name, map[string]string{"VisibilityTimeout": "30"})
			for k := range 3 { // 1 s jobs
				mustSend(t, c, qurl, "job")
				step(srv, base+2*k)
				m := receiveOne(t, c, qurl, nil)
				step(srv, base+2*k+1)
				del(t, c, qurl, m)
			}
			mustSend(t, c, qurl, "long")
			step(srv, base+10)
			m := receiveOne(t, c, qurl, nil)
			for s := 20; s <= 60; s += 10 {
				step(srv, base+s)
				renew(t, protocol, qurl, *m.ReceiptHandle, header)
			}
			rep := leaseReport(t, srv, name)
			want := map[bool]string{true: "long-job", false: "held-renewed"}[header]
			if rep.Diagnosis != want || len(rep.Findings) != 1 || len(rep.Findings[0].HeldLeases) != 1 || rep.Findings[0].HeldLeases[0].Progress != header {
				t.Errorf("%s: diagnosis %s, findings %+v; want %s", name, rep.Diagnosis, rep.Findings, want)
			}
		}
	}
}
